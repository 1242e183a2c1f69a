// Rule: interlock_reconciler_lag_seconds counts "since the deployment's last reconciliation pass ended" (README
// metrics table). A pass cut short by its process stopping is not a pass that ended (queues/facts.ts: onPass is not
// called): it records where it got to and gives the lease up, but leaves when the last pass ended as it was
// (end-reconcile-pass-2.lua). It used to write that it ended then, so a deployment whose facts processes keep being
// stopped mid-pass (a crash loop, rolling restarts) read a lag near 0 while it reconciled nothing, and no lag alert fired.
import { expect, it } from 'vitest';
import { startReconciler, type ReconcileReport } from '../../queues/facts.js';
import { createFacts, reconcileLease, type Applied } from '../../src/interlock.js';
import { createMetrics } from '../../webhooks/ops/metrics.js';
import { sleep } from '../support/harness.js';
import { commitRefunds, countingReader, HOUR, worldPerTest } from './reconcile-support.js';

const each = worldPerTest();

function lag(text: string): number | undefined {
  const line = text.split('\n').find((one) => one.startsWith('interlock_reconciler_lag_seconds '));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

it('a pass cut short by its stop leaves the lag counting from the last pass that ended', async () => {
  const world = await each.open();
  const [a, b] = [await world.node('a'), await world.node('b')];
  await commitRefunds(world, a, 'pi_1', 1);
  await commitRefunds(world, a, 'pi_2', 1);
  // Another facts process of the deployment reads the lag (it runs a reconciler).
  const metrics = createMetrics({ stores: b.stores, defaultMetrics: false });
  metrics.reconcilerStarted();

  // One pass runs to its end.
  const ended: ReconcileReport[] = [];
  const whole = startReconciler(a.stores, createFacts(a.stores, countingReader().reader), { intervalMs: HOUR, horizonMs: HOUR, atStart: false, onPass: (report) => ended.push(report) });
  expect(await whole.pass()).toMatchObject({ stopped: null, skipped: null });
  await whole.close();
  expect(ended).toHaveLength(1);
  const lastEnded = await reconcileLease(b.stores).lastEnded();
  expect(lastEnded).not.toBeNull();
  await sleep(200);
  const lagBefore = lag((await metrics.render()).text) ?? -1;
  expect(lagBefore).toBeGreaterThan(0);

  // The next pass is stopped while it waits on a slow Stripe read, its second.
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const facts = createFacts(a.stores, countingReader().reader);
  let reads = 0;
  const slow = {
    ...facts,
    reread: async (effectId: string): Promise<Applied[]> => {
      reads += 1;
      if (reads === 2) await held;
      return facts.reread(effectId);
    },
  };
  const cut: ReconcileReport[] = [];
  const stopped = startReconciler(a.stores, slow, { intervalMs: HOUR, horizonMs: HOUR, atStart: false, onPass: (report) => cut.push(report) });
  const running = stopped.pass();
  while (reads < 2) await sleep(20);
  await stopped.close();
  release();
  await running.catch(() => undefined);
  expect(cut).toEqual([]);

  // It gave the lease up (the next pass may run), and the last pass that ended is still the first.
  expect(await reconcileLease(b.stores).lastEnded()).toBe(lastEnded);
  expect(lag((await metrics.render()).text)).toBeGreaterThanOrEqual(lagBefore);
  const next = startReconciler(a.stores, createFacts(a.stores, countingReader().reader), { intervalMs: HOUR, horizonMs: HOUR, atStart: false });
  expect(await next.pass()).toMatchObject({ skipped: null });
  await next.close();
  expect(await reconcileLease(b.stores).lastEnded()).toBeGreaterThan(lastEnded ?? Number.POSITIVE_INFINITY);
}, 60_000);
