// The coalescer behind the webhook route's adds: what arrives in one turn of the event loop runs as one batch, and
// every caller is answered with its own item's outcome, never another's.
import { describe, expect, it } from 'vitest';
import { createCoalescer, type Settled } from '../../queues/coalesce.js';

/** A batch runner that records its batches and answers each item as `answer` says. */
function recorder<T, R>(answer: (item: T) => Settled<R>) {
  const batches: T[][] = [];
  const run = async (items: readonly T[]) => {
    batches.push([...items]);
    return items.map(answer);
  };
  return { batches, run };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('createCoalescer', () => {
  it('runs what is submitted in one turn as one batch, in submission order, and answers each with its own value', async () => {
    const { batches, run } = recorder((item: number): Settled<number> => ({ ok: true, value: item * 10 }));
    const coalescer = createCoalescer(run);
    const answers = Promise.all([1, 2, 3].map((item) => coalescer.submit(item)));
    expect(batches).toEqual([]);
    expect(await answers).toEqual([10, 20, 30]);
    await nextTurn();
    expect(await coalescer.submit(4)).toBe(40);
    expect(batches).toEqual([[1, 2, 3], [4]]);
  });

  it("an item's own failure rejects that item only", async () => {
    const { run } = recorder((item: number): Settled<number> => (item === 2 ? { ok: false, error: new Error('two failed') } : { ok: true, value: item }));
    const coalescer = createCoalescer(run);
    const answers = await Promise.allSettled([1, 2, 3].map((item) => coalescer.submit(item)));
    expect(answers.map((answer) => answer.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(answers[1]).toMatchObject({ reason: new Error('two failed') });
  });

  it('a batch whose run throws rejects every item of that batch, and the next batch runs as usual', async () => {
    let fail = true;
    const coalescer = createCoalescer(async (items: readonly number[]) => {
      if (fail) throw new Error('Redis is unreachable');
      return items.map((item): Settled<number> => ({ ok: true, value: item }));
    });
    const answers = await Promise.allSettled([1, 2].map((item) => coalescer.submit(item)));
    expect(answers).toEqual([
      { status: 'rejected', reason: new Error('Redis is unreachable') },
      { status: 'rejected', reason: new Error('Redis is unreachable') },
    ]);
    fail = false;
    expect(await coalescer.submit(3)).toBe(3);
  });

  it('an item the batch gave no outcome for is rejected, not left waiting', async () => {
    const coalescer = createCoalescer(async (items: readonly number[]) => items.slice(1).map((item): Settled<number> => ({ ok: true, value: item })));
    const answers = await Promise.allSettled([1, 2].map((item) => coalescer.submit(item)));
    expect(answers.map((answer) => answer.status)).toEqual(['fulfilled', 'rejected']);
  });

  it('a batch under way does not hold back the next turn’s batch', async () => {
    const release: (() => void)[] = [];
    const started: number[][] = [];
    const coalescer = createCoalescer(async (items: readonly number[]) => {
      started.push([...items]);
      await new Promise<void>((resolve) => release.push(resolve));
      return items.map((item): Settled<number> => ({ ok: true, value: item }));
    });
    const first = coalescer.submit(1);
    await nextTurn();
    const second = coalescer.submit(2);
    await nextTurn();
    expect(started).toEqual([[1], [2]]);
    release[1]?.();
    expect(await second).toBe(2);
    release[0]?.();
    expect(await first).toBe(1);
  });
});
