// Rule: the reconciler does not spend Stripe's rate limit needlessly (the limit is per account, and a 429 pauses the
// whole effects queue, README "Rate limits"). Several facts processes (compose scales `worker,facts`) run one
// reconciliation pass at a time between them, under a lease in Redis, and about one pass an interval on their
// schedules, not one each; a lease whose holder died lapses by itself, and a holder that lost its lease mid-pass stops
// and records nothing over its successor's position.
import { expect, it } from 'vitest';
import { startReconciler, type ReconcileReport } from '../../queues/facts.js';
import { createFacts, reconcileLease } from '../../src/interlock.js';
import { sleep } from '../support/harness.js';
import { commitRefunds, countingReader, HOUR, tracing, worldPerTest } from './reconcile-support.js';


const each = worldPerTest();

it('two facts processes passing at once read each committed effect at Stripe once between them', async () => {
  const world = await each.open();
  const a = await world.node('a');
  const b = await world.node('b');
  await commitRefunds(world, a, 'pi_1', 1);
  await commitRefunds(world, a, 'pi_2', 1);
  await commitRefunds(world, a, 'pi_3', 1);
  const { reader, calls } = countingReader();
  const ra = startReconciler(a.stores, createFacts(a.stores, reader), { intervalMs: HOUR, horizonMs: HOUR, atStart: false });
  const rb = startReconciler(b.stores, createFacts(b.stores, reader), { intervalMs: HOUR, horizonMs: HOUR, atStart: false });
  try {
    const reports = await Promise.all([ra.pass(), rb.pass()]);
    expect(reports.map((report) => report.skipped === null).sort()).toEqual([false, true]);
    expect(reports.find((report) => report.skipped !== null)).toMatchObject({ effects: 0, skipped: expect.stringContaining('holds the lease') });
  } finally {
    await Promise.all([ra.close(), rb.close()]);
  }
  // 3 effects, a refunds and a disputes read each.
  expect(calls.refundsOf.length + calls.disputesOf.length).toBe(6);
});

it('facts processes on the same schedule make about one pass an interval between them, not one each', async () => {
  const world = await each.open();
  const a = await world.node('a');
  const b = await world.node('b');
  await commitRefunds(world, a, 'pi_1', 2);
  const { reader } = countingReader();
  const passes: ReconcileReport[] = [];
  const onPass = (report: ReconcileReport) => passes.push(report);
  const ra = startReconciler(a.stores, createFacts(a.stores, reader), { intervalMs: 400, horizonMs: HOUR, onPass });
  await sleep(200);
  const rb = startReconciler(b.stores, createFacts(b.stores, reader), { intervalMs: 400, horizonMs: HOUR, onPass });
  try {
    await sleep(1_300);
  } finally {
    await Promise.all([ra.close(), rb.close()]);
  }
  // Passes due at 0, 400, 800 and 1,200 ms in one process and at 200, 600, 1,000 and 1,400 ms in the other: about four
  // between them (eight when each process keeps its own schedule).
  expect(passes.length).toBeGreaterThanOrEqual(3);
  expect(passes.length).toBeLessThanOrEqual(5);
});

it('a lease whose holder died holds the passes back only until it lapses', async () => {
  const world = await each.open();
  const node = await world.node('a');
  await commitRefunds(world, node, 'pi_1', 2);
  // A process took the lease and died before its first renewal.
  expect(await reconcileLease(node.stores).take('a-process-that-died', 300, null)).toMatchObject({ status: 'OK' });
  const reconciler = startReconciler(node.stores, createFacts(node.stores, countingReader().reader), { intervalMs: HOUR, horizonMs: HOUR, atStart: false });
  try {
    expect(await reconciler.pass()).toMatchObject({ effects: 0, skipped: expect.stringContaining('holds the lease') });
    await sleep(400);
    expect(await reconciler.pass()).toMatchObject({ effects: 2, skipped: null, stopped: null });
  } finally {
    await reconciler.close();
  }
});

it('a holder that lost its lease mid-pass stops re-reading and does not record where it stopped', async () => {
  const world = await each.open();
  const node = await world.node('a');
  await commitRefunds(world, node, 'pi_1', 4);
  const redis = each.redis();
  const connection = redis;
  const { keys } = node.stores;
  const tried: string[] = [];
  let stalled = false;
  const facts = tracing(createFacts(node.stores, countingReader().reader), tried);
  const stalling = {
    ...facts,
    reread: async (effectId: string) => {
      if (!stalled) {
        stalled = true;
        // The process stalls past its lease (a GC pause, a frozen VM): the lease lapses and another process takes it.
        await connection.set(keys.reconcileLease, 'the-process-that-took-over', 'PX', 10_000);
        await sleep(250);
      }
      return facts.reread(effectId);
    },
  };
  const reconciler = startReconciler(node.stores, stalling, { intervalMs: HOUR, horizonMs: HOUR, atStart: false, leaseMs: 150 });
  try {
    expect(await reconciler.pass()).toMatchObject({ effects: 1, stopped: expect.stringContaining('lost the reconciliation lease') });
  } finally {
    await reconciler.close();
  }
  expect(tried).toHaveLength(1);
  expect(await connection.hgetall(keys.reconcileCursor)).toEqual({});
  expect(await connection.get(keys.reconcileLease)).toBe('the-process-that-took-over');
});
