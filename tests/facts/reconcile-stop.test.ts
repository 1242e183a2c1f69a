// Rule: a stop does not wait for a reconciliation pass's Stripe reads (README "Running it": a SIGTERM lets sends in
// progress finish and exits; the reconciler sends nothing). Closing the reconciler ends its pass at the effect it is
// reading, records where the pass got to and gives the lease up, so another facts process goes on from that effect at
// its next scheduled pass, without waiting an interval; the effect cut short and the ones after it are read then, and
// what the pass finished is not read again.
import { expect, it } from 'vitest';
import { startReconciler, type ReconcileReport } from '../../queues/facts.js';
import { createFacts, reconcileLease, type Applied } from '../../src/interlock.js';
import { sleep } from '../support/harness.js';
import { commitRefunds, countingReader, HOUR, tracing, worldPerTest } from './reconcile-support.js';

const each = worldPerTest();

it("closing the reconciler ends its pass at the effect whose Stripe read is in progress, and another process's pass goes on from there", async () => {
  const world = await each.open();
  const a = await world.node('a');
  const b = await world.node('b');
  const committed = [...(await commitRefunds(world, a, 'pi_1', 1)), ...(await commitRefunds(world, a, 'pi_2', 1)), ...(await commitRefunds(world, a, 'pi_3', 1))];
  // Stripe does not answer the pass's second re-read until the test lets it (a slow Stripe: each read runs to its timeout).
  let answer: () => void = () => undefined;
  const answered = new Promise<void>((resolve) => {
    answer = resolve;
  });
  const triedA: string[] = [];
  const facts = createFacts(a.stores, countingReader().reader);
  const slow = {
    ...facts,
    reread: async (effectId: string): Promise<Applied[]> => {
      triedA.push(effectId);
      if (triedA.length === 2) await answered;
      return facts.reread(effectId);
    },
  };
  const passes: ReconcileReport[] = [];
  const reconciler = startReconciler(a.stores, slow, { intervalMs: HOUR, horizonMs: HOUR, onPass: (report) => passes.push(report) });
  let closed: 'closed' | 'still waiting for the Stripe read';
  try {
    // The pass at start has re-read the first effect and is waiting on Stripe for the second.
    while (triedA.length < 2) await sleep(20);
    closed = await Promise.race([reconciler.close().then(() => 'closed' as const), sleep(10_000).then(() => 'still waiting for the Stripe read' as const)]);
  } finally {
    answer();
    await reconciler.close();
  }
  expect(closed).toBe('closed');
  // A pass cut short by the stop is not reported as a pass that ended (nor counted as stopped by a failing Stripe).
  expect(passes).toEqual([]);
  // The lease is free, and the schedule does not hold another process back: its next pass on the schedule (a gap of
  // almost the interval, as startReconciler's) is taken now, and starts after the first effect.
  const lease = reconcileLease(b.stores);
  const turn = await lease.take('another-process', 30_000, HOUR - 5_000);
  expect(turn).toMatchObject({ status: 'OK' });
  const [first, second] = triedA;
  if (turn.status === 'OK') expect(turn.cursor.position?.member).toBe(first);
  await lease.release('another-process');
  const triedB: string[] = [];
  const other = startReconciler(b.stores, tracing(createFacts(b.stores, countingReader().reader), triedB), { intervalMs: HOUR, horizonMs: HOUR, atStart: false });
  try {
    expect(await other.pass()).toMatchObject({ effects: 2, stopped: null, skipped: null });
  } finally {
    await other.close();
  }
  expect(triedB).toEqual([second, committed.find((effectId) => effectId !== first && effectId !== second)]);
});

it('a pass asked for after the reconciler closed is skipped, and one on the schedule never starts', async () => {
  const world = await each.open();
  const node = await world.node('a');
  await commitRefunds(world, node, 'pi_1', 1);
  const tried: string[] = [];
  const reconciler = startReconciler(node.stores, tracing(createFacts(node.stores, countingReader().reader), tried), { intervalMs: HOUR, horizonMs: HOUR, atStart: false });
  await reconciler.close();
  expect(await reconciler.pass()).toMatchObject({ effects: 0, skipped: 'this process is stopping' });
  expect(tried).toEqual([]);
  expect(await reconcileLease(node.stores).take('another-process', 30_000, null)).toMatchObject({ status: 'OK' });
});
