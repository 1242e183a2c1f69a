// The coalescer behind the webhook route's adds: what arrives in one turn of the event loop runs as one batch, and
// every caller is answered with its own item's value, never another's.
import { describe, expect, it } from 'vitest';
import { createCoalescer } from '../src/coalesce.js';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('createCoalescer', () => {
  it('runs what is submitted in one turn as one batch, in submission order, and answers each with its own value', async () => {
    const batches: number[][] = [];
    const coalescer = createCoalescer(async (items: readonly number[]) => {
      batches.push([...items]);
      return items.map((item) => item * 10);
    });
    const answers = Promise.all([1, 2, 3].map((item) => coalescer.submit(item)));
    expect(batches).toEqual([]);
    expect(await answers).toEqual([10, 20, 30]);
    await nextTurn();
    expect(await coalescer.submit(4)).toBe(40);
    expect(batches).toEqual([[1, 2, 3], [4]]);
  });

  it('a batch leaves as soon as it holds maxBatch items; the rest of the turn forms the next batch', async () => {
    const batches: number[][] = [];
    const coalescer = createCoalescer(
      async (items: readonly number[]) => {
        batches.push([...items]);
        return items;
      },
      { maxBatch: 3 },
    );
    const answers = [1, 2, 3, 4, 5].map((item) => coalescer.submit(item));
    // The first three left at once, before the turn ended; the last two wait for its end.
    expect(batches).toEqual([[1, 2, 3]]);
    expect(await Promise.all(answers)).toEqual([1, 2, 3, 4, 5]);
    expect(batches).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('a batch whose run throws rejects every item of that batch, and the next batch runs as usual', async () => {
    let fail = true;
    const coalescer = createCoalescer(async (items: readonly number[]) => {
      if (fail) throw new Error('Redis is unreachable');
      return items;
    });
    const answers = await Promise.allSettled([1, 2].map((item) => coalescer.submit(item)));
    expect(answers).toEqual([
      { status: 'rejected', reason: new Error('Redis is unreachable') },
      { status: 'rejected', reason: new Error('Redis is unreachable') },
    ]);
    fail = false;
    expect(await coalescer.submit(3)).toBe(3);
  });

  it('a batch that answers fewer values than it was given rejects every item, none is left waiting or given another’s value', async () => {
    const coalescer = createCoalescer(async (items: readonly number[]) => items.slice(1));
    const answers = await Promise.allSettled([1, 2].map((item) => coalescer.submit(item)));
    expect(answers.map((answer) => answer.status)).toEqual(['rejected', 'rejected']);
  });

  it('a batch under way does not hold back the next turn’s batch', async () => {
    const release: (() => void)[] = [];
    const started: number[][] = [];
    const coalescer = createCoalescer(async (items: readonly number[]) => {
      started.push([...items]);
      await new Promise<void>((resolve) => release.push(resolve));
      return items;
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
