// Rule: each reconciliation pass goes on from where the last one stopped, so a horizon holding more committed effects
// than one pass re-reads is covered in turn, not only its oldest (README "Missed webhooks"); and that holds across
// restarts of the facts process (a deploy, a crash, a compose rescale): the position is kept in Redis, not in the
// process, so a process restarted at least once per covering cycle does not re-read its oldest effects for ever.
import { expect, it } from 'vitest';
import { startReconciler } from '../../queues/facts.js';
import { createFacts } from '../../src/interlock.js';
import { commitRefunds, countingReader, tracing, worldPerTest } from './reconcile-support.js';

const each = worldPerTest();

it('passes across restarts of the facts process still cover every committed effect in the horizon', async () => {
  const world = await each.open();
  const node = await world.node('a');
  const ids = await commitRefunds(world, node, 'pi_1', 5);
  const tried: string[] = [];
  const facts = tracing(createFacts(node.stores, countingReader().reader), tried);
  // limit 2 stands for the default 10,000 with a horizon holding more than that. Each "process" runs one pass and is
  // then restarted; the last starts over once the third reached the end.
  const counts: number[] = [];
  for (let restart = 0; restart < 4; restart += 1) {
    const reconciler = startReconciler(node.stores, facts, { intervalMs: 3_600_000, horizonMs: 3_600_000, limit: 2, atStart: false });
    counts.push((await reconciler.pass()).effects);
    await reconciler.close();
  }
  expect(counts).toEqual([2, 2, 1, 2]);
  expect(tried).toEqual([...ids, ...ids.slice(0, 2)]);
});

it('a facts process on another connection (another node) goes on from where the first one stopped', async () => {
  const world = await each.open();
  const a = await world.node('a');
  const b = await world.node('b');
  const ids = await commitRefunds(world, a, 'pi_1', 4);
  const tried: string[] = [];
  const { reader } = countingReader();
  const first = startReconciler(a.stores, tracing(createFacts(a.stores, reader), tried), { intervalMs: 3_600_000, horizonMs: 3_600_000, limit: 3, atStart: false });
  const second = startReconciler(b.stores, tracing(createFacts(b.stores, reader), tried), { intervalMs: 3_600_000, horizonMs: 3_600_000, limit: 3, atStart: false });
  try {
    expect((await first.pass()).effects).toBe(3);
    expect((await second.pass()).effects).toBe(1);
    expect(tried).toEqual(ids);
  } finally {
    await Promise.all([first.close(), second.close()]);
  }
});
