// Rule: refunds queued behind another refund of their payment (REFUNDS_HOLD) whose send is stuck do not keep their
// worker's slots for a whole send timeout: each waits a few seconds at most (HOLD_WAIT_MS), answers IN_FLIGHT and is
// retried later, so an effect on another payment queued behind them is judged within seconds, not after the stuck
// send's timeout (30 s for Stripe).
import { expect, it } from 'vitest';
import { approvalTerms, refundProposal } from '../support/harness.js';
import { startStuckHolder } from './stuck-holder-rig.js';

const SEND_TIMEOUT_MS = 30_000;

it('two refunds waiting behind a stuck refund of their payment leave a two-slot worker free for a refund of another payment', async () => {
  // The stuck holder keeps its claim for the whole test; sends may take as long as Stripe's.
  const { stores, queue } = await startStuckHolder({
    label: 'holdslots',
    config: { claimTtlMs: 90_000, sendTimeoutMs: SEND_TIMEOUT_MS, dedupMarginMs: 60_000 },
    payments: ['pi_1', 'pi_2'],
    worker: { concurrency: 2 },
  });
  const [j1, j2] = [approvalTerms(), approvalTerms()];
  const k = approvalTerms({ scope: 'payment:pi_2' });
  for (const terms of [j1, j2, k]) await stores.approvals.grant(terms);

  // Two refunds of pi_1 take both slots and wait behind H.
  await queue.propose(refundProposal({ requestId: 'case-j1', approval: j1.id, amount: 1_000 }));
  await queue.propose(refundProposal({ requestId: 'case-j2', approval: j2.id, amount: 1_000 }));
  await expect.poll(() => queue.queue.getActiveCount(), { timeout: 10_000, interval: 20 }).toBe(2);

  // A refund of pi_2, queued behind them, is judged within seconds: well before H's send would time out.
  const queuedAt = Date.now();
  const { effectId } = await queue.propose(refundProposal({ requestId: 'case-k', approval: k.id, amount: 1_000, paymentIntent: 'pi_2' }));
  const answer = await queue.waitFor(effectId, 10_000);
  expect({ outcome: answer?.outcome ?? null, withinSeconds: Date.now() - queuedAt < 10_000 }).toEqual({ outcome: 'COMMITTED', withinSeconds: true });
});
