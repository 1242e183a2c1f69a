// Rule: an effects job that could not be judged yet (Stripe or Redis not answering) is retried for the whole
// INTERLOCK_RETRY_FOR_MS window, counted from its first failure on Redis's clock, whichever worker retries it: the
// window's start (the job's `transient.failingSince`) and each look at it are Redis time, not a worker's Date.now().
// A worker whose clock is an hour ahead must not give up a job that first failed a second ago (fail it for good and
// raise not_judged for an effect nobody judged); one whose clock is an hour behind must not retry past the window.
// Real Redis and BullMQ under a random prefix, a memory target whose premise reads fail; this process plays the
// second worker, its Date.now() moved (BullMQ's own times move with it, as on a host whose clock is off).
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEffectsQueue, startEffectsWorker, type TransientFailures } from '../../queues/effects.js';
import { createMemoryTarget, openStores, startSender } from '../../src/interlock.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig, testKey } from '../support/harness.js';

const HOUR = 3_600_000;
const WINDOW_MS = 30 * 60_000;
const closers: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/**
 * A job whose premise reads keep failing, noted as failing since `sinceAgoMs` before Redis's now (as a worker on
 * Redis's clock wrote it), run by a worker whose clock is `skewMs` off: the job once that worker has looked at it.
 */
async function secondLook(sinceAgoMs: number, skewMs: number) {
  const config = testConfig({ keyPrefix: `twc${randomBytes(6).toString('hex')}` });
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  const sender = await startSender(stores, target);
  const queue = createEffectsQueue(stores);
  closers.push(async () => {
    await sender.close();
    await stores.close();
    await removePrefixes([config.keyPrefix]);
  });
  closers.push(() => queue.close());
  const terms = approvalTerms();
  await stores.approvals.grant(terms);
  target.inject({ kind: 'premise-down' });
  const { effectId } = await queue.propose(refundProposal({ approval: terms.id }));
  const failingSince = (await stores.journal.serverTime()) - sinceAgoMs;
  const job = await queue.queue.getJob(effectId);
  await job?.updateData({ ...job.data, transient: { failures: 1, failingSince } });

  const real = Date.now.bind(Date);
  vi.spyOn(Date, 'now').mockImplementation(() => real() + skewMs);
  const worker = startEffectsWorker(stores, sender, { concurrency: 1, transientRetry: { firstDelayMs: 50, maxDelayMs: 100, forMs: WINDOW_MS } });
  closers.push(() => worker.close(true));
  // Until the worker has looked at the job again: it failed for good, or it noted a second failure.
  for (let look = 0; look < 500; look += 1) {
    const seen = await queue.queue.getJob(effectId);
    const transient = seen?.data.transient as TransientFailures | undefined;
    if (seen?.finishedOn !== undefined || (transient?.failures ?? 0) >= 2) {
      return { failingSince, transient, failedReason: seen?.failedReason ?? null, alert: () => stores.alerts.get(`not_judged:${effectId}`) };
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`job ${effectId} was not run again`);
}

describe('the transient retry window, on a worker whose clock differs from the one that noted the first failure', () => {
  it('an hour ahead, a second into a 30-minute window: the job is retried, not failed for good', async () => {
    const seen = await secondLook(1_000, HOUR);
    expect({ failedReason: seen.failedReason, alert: await seen.alert() }).toEqual({ failedReason: null, alert: null });
    expect(seen.transient).toEqual({ failures: 2, failingSince: seen.failingSince });
  });

  it('an hour behind, a second past the end of the window: the job fails for good, and not_judged is raised', async () => {
    const seen = await secondLook(WINDOW_MS + 1_000, -HOUR);
    expect(seen.failedReason).toMatch(/ for \d+ s, 2 tries: /);
    // The alert is raised as the job fails (its 'failed' hook), a moment after.
    let alert = await seen.alert();
    for (let look = 0; look < 250 && alert === null; look += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      alert = await seen.alert();
    }
    expect(alert).toMatchObject({ kind: 'not_judged', resolvedAt: null });
  });
});
