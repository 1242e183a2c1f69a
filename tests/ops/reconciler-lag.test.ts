// Rule: interlock_reconciler_lag_seconds says how long ago the deployment's last reconciliation pass ended, whichever
// facts process ran it. The facts processes take turns (one pass an interval between them, under a lease), so a
// process whose turns another took must not report a lag of its own that grows for ever (an alert on it would fire
// while reconciliation runs fine). Absent in a process that runs no reconciler, and before any pass ended.
import { expect, it } from 'vitest';
import { startReconciler } from '../../queues/facts.js';
import { createFacts } from '../../src/interlock.js';
import { createMetrics } from '../../webhooks/ops/metrics.js';
import { sleep } from '../support/harness.js';
import { countingReader, HOUR, worldPerTest } from '../facts/reconcile-support.js';

const each = worldPerTest();

function lag(text: string): number | undefined {
  const line = text.split('\n').find((one) => one.startsWith('interlock_reconciler_lag_seconds '));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

it('two facts processes answer the lag of the last pass either ran; a process with no reconciler answers none', async () => {
  const world = await each.open();
  const a = await world.node('a');
  const b = await world.node('b');
  const [metricsA, metricsB, metricsApi] = [createMetrics({ stores: a.stores, defaultMetrics: false }), createMetrics({ stores: b.stores, defaultMetrics: false }), createMetrics({ stores: a.stores, defaultMetrics: false })];
  metricsA.reconcilerStarted();
  metricsB.reconcilerStarted();
  const { reader } = countingReader();
  const ra = startReconciler(a.stores, createFacts(a.stores, reader), { intervalMs: HOUR, horizonMs: HOUR, atStart: false, onPass: (report, at) => metricsA.reconciled(report, at) });
  const rb = startReconciler(b.stores, createFacts(b.stores, reader), { intervalMs: HOUR, horizonMs: HOUR, atStart: false, onPass: (report, at) => metricsB.reconciled(report, at) });
  try {
    expect(lag((await metricsA.render()).text), 'before any pass').toBeUndefined();
    expect((await ra.pass()).skipped).toBeNull();
    await sleep(1_200);
    // b runs the next pass: a took no turn since, and its lag is the deployment's, not a second and growing.
    expect((await rb.pass()).skipped).toBeNull();
    const [lagA, lagB] = [lag((await metricsA.render()).text), lag((await metricsB.render()).text)];
    expect(lagA).toBeDefined();
    expect(lagA ?? Infinity).toBeLessThan(1);
    expect(lagB ?? Infinity).toBeLessThan(1);
    expect(lag((await metricsApi.render()).text), 'a process with no reconciler').toBeUndefined();
  } finally {
    await Promise.all([ra.close(), rb.close()]);
  }
});
