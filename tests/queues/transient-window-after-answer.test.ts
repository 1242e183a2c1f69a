// Rule: an effects job fails for good before judging (a not_judged alert, nothing sent) only once its submit has
// failed for the whole transient window in a row (TransientRetry.forMs). Any answer from the gate ends that streak: a
// job kept waiting by IN_FLIGHT answers (behind another refund that holds the payment's refunds) and then meeting one
// blip is retried, not failed for good because a failure before the wait is older than the window.
import { expect, it } from 'vitest';
import { approvalTerms, refundProposal, sleep } from '../support/harness.js';
import { startStuckHolder } from './stuck-holder-rig.js';

/** The transient window (ms): short, so the test outlasts it; the heal below comes well inside a window of its own. */
const WINDOW_MS = 2_000;

it('a job that waited behind another refund (IN_FLIGHT) and then meets one failed premise read is retried, not failed for good', async () => {
  const answers: string[] = [];
  // Claims last a minute: the stuck holder keeps its own until the test lets it go.
  const { target, stores, sender, queue, holder } = await startStuckHolder({
    label: 'window',
    config: { claimTtlMs: 60_000 },
    worker: { concurrency: 2, transientRetry: { firstDelayMs: 100, maxDelayMs: 200, forMs: WINDOW_MS }, onAnswer: (answer) => void answers.push(answer.outcome) },
  });
  const j = approvalTerms();
  await stores.approvals.grant(j);

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
