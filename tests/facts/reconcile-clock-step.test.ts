// Rule: the scheduled reconciliation passes survive a Redis clock that stepped back (an NTP step, a failover to a
// replica whose clock is behind): take-reconcile-lease-2.lua already ignores a last pass's `startedAt` that lies in
// the future ("now >= started_at"), so the schedule is meant to go on. But every pass also writes
// `notBefore = now + hold` (hold 0 when Stripe did not rate-limit it), i.e. its own end time, and that field is not
// guarded: after a step back of an hour, no scheduled pass runs for an hour (skipped, at debug, as "Stripe
// rate-limited the last pass", which it did not), while interlock_reconciler_lag_seconds reads 0 (max(0, negative)),
// so nothing shows that reconciliation stopped.
import { expect, it } from 'vitest';
import { startReconciler, type ReconcilePass, type ReconcileReport } from '../../queues/facts.js';
import { createFacts } from '../../src/interlock.js';
import { createMetrics } from '../../webhooks/ops/metrics.js';
import { sleep } from '../support/harness.js';
import { commitRefunds, countingReader, HOUR, worldPerTest } from './reconcile-support.js';

const each = worldPerTest();

function lag(text: string): number | undefined {
  const line = text.split('\n').find((one) => one.startsWith('interlock_reconciler_lag_seconds '));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

it('after the Redis clock stepped back an hour, scheduled passes go on (and the lag does not read 0)', async () => {
  const world = await each.open();
  const node = await world.node('a');
  await commitRefunds(world, node, 'pi_1', 2);
  const redis = each.redis();
  const now = await node.journal.serverTime();
  // What an ordinary pass (no 429) wrote an hour "ahead": the clock then stepped back by an hour.
  const aheadEnd = now + HOUR;
  await redis.hset(node.stores.keys.reconcileCursor, { failedInARow: '0', startedAt: String(aheadEnd - 1_000), endedAt: String(aheadEnd), notBefore: String(aheadEnd) });
  const metrics = createMetrics({ stores: node.stores, defaultMetrics: false });
  metrics.reconcilerStarted();
  const passes: ReconcileReport[] = [];
  const reconciler = startReconciler(node.stores, createFacts(node.stores, countingReader().reader), { intervalMs: 200, horizonMs: HOUR, onPass: (report) => passes.push(report) });
  let probe: ReconcilePass | null = null;
  try {
    await sleep(1_000);
  } finally {
    await reconciler.close();
  }
  const lagNow = lag((await metrics.render()).text);
  if (passes.length === 0) {
    // Why: a scheduled take right now.
    const { reconcileLease } = await import('../../src/interlock.js');
    const turn = await reconcileLease(node.stores).take('probe', 1_000, 150);
    probe = { effects: 0, appended: 0, alerts: [], unread: 0, failures: [], stopped: null, skipped: JSON.stringify(turn) };
  }
  expect(passes.length, `scheduled passes within 1 s at a 200 ms interval (take answered ${probe?.skipped}; lag metric ${lagNow})`).toBeGreaterThan(0);
});
