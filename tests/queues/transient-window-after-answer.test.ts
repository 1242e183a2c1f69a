// Rule: an effects job fails for good before judging (a not_judged alert, nothing sent) only once its submit has
// failed for the whole transient window in a row (TransientRetry.forMs). Any answer from the gate ends that streak: a
// job kept waiting by IN_FLIGHT answers (behind another refund that holds the payment's refunds) and then meeting one
// blip is retried, not failed for good because a failure before the wait is older than the window.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { createEffectsQueue, startEffectsWorker } from '../../queues/effects.js';
import { createMemoryTarget, openStores, startSender } from '../../src/interlock.js';
import { approvalTerms, refundProposal, removePrefixes, sleep, testConfig, testKey } from '../support/harness.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** The transient window (ms): short, so the test outlasts it; the heal below comes well inside a window of its own. */
const WINDOW_MS = 2_000;

it('a job that waited behind another refund (IN_FLIGHT) and then meets one failed premise read is retried, not failed for good', async () => {
  // Claims last a minute: the stuck holder below keeps its own until the test lets it go.
  const config = testConfig({ keyPrefix: `t-window-${randomBytes(5).toString('hex')}`, claimTtlMs: 60_000 });
  const key = testKey().key;
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs, movedBySends: ['refunded_by_others'] });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: key });
  const sender = await startSender(stores, target, { workerId: 'service' });
  const queue = createEffectsQueue(stores);
  const answers: string[] = [];
  const worker = startEffectsWorker(stores, sender, { concurrency: 2, transientRetry: { firstDelayMs: 100, maxDelayMs: 200, forMs: WINDOW_MS }, onAnswer: (answer) => void answers.push(answer.outcome) });
  // Another worker process, alive, whose send of refund H never came back: H's dispatch stays open and holds the
  // payment's refunds while that process beats.
  const holderStores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: key });
  const holder = await startSender(holderStores, target, { workerId: 'holder' });
  closers.push(async () => {
    await worker.close(true);
    await queue.close();
    await sender.close();
    await holder.close();
    await holderStores.close();
    await stores.close();
    await removePrefixes([config.keyPrefix]);
  });
  const [h, j] = [approvalTerms(), approvalTerms()];
  await stores.approvals.grant(h);
  await stores.approvals.grant(j);
  target.inject({ kind: 'crash-before-send' });
  const hProposal = refundProposal({ requestId: 'case-h', approval: h.id, amount: 1_000 });
  await expect(holder.gate.submit(hProposal)).rejects.toThrow(/simulated crash/);
  expect(await stores.journal.onceHolder('payment:pi_1', 'refunds')).toBe(holder.gate.effectIdOf(hProposal));

  // Refund J: its first run meets a failed premise read (a blip); its next ones read fine and wait behind H.
  target.inject({ kind: 'premise-error' });
  const { effectId } = await queue.propose(refundProposal({ requestId: 'case-j', approval: j.id, amount: 1_000 }));
  await expect.poll(async () => (await queue.queue.getJob(effectId))?.data.transient?.failures, { timeout: 10_000 }).toBe(1);
  const blipSeenAt = Date.now();
  await expect.poll(() => answers.includes('IN_FLIGHT'), { timeout: 10_000 }).toBe(true);

  // Longer after that blip than the whole window, Stripe fails one read again: the job must try again.
  await sleep(Math.max(0, blipSeenAt + WINDOW_MS + 200 - Date.now()));
  const downAt = Date.now();
  target.inject({ kind: 'premise-down' });
  await expect
    .poll(
      async () => {
        const job = await queue.queue.getJob(effectId);
        return job?.finishedOn !== undefined || (job?.data.transient?.failingSince ?? 0) >= downAt;
      },
      { timeout: 10_000, interval: 20 },
    )
    .toBe(true);
  target.heal();
  const failed = await queue.queue.getJob(effectId);
  expect(failed?.failedReason ?? null).toBeNull();

  // Once H's holder is gone, recovery settles H, and J is judged.
  await holder.heartbeat.stop({ clear: true });
  expect((await sender.gate.recover()).settled.map((settled) => settled.outcome)).toEqual(['COMMITTED_BY_RETRY']);
  const answer = await queue.waitFor(effectId, 20_000);
  const job = await queue.queue.getJob(effectId);
  expect({ judged: answer !== null && answer.outcome !== 'IN_FLIGHT', failedReason: job?.failedReason ?? null }).toEqual({ judged: true, failedReason: null });
  expect(await stores.alerts.get(`not_judged:${effectId}`)).toBeNull();
});
