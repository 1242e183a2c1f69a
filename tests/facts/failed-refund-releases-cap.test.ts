// Rule: a shared cap counts money moved (README: "all agents together move at most $30 on this payment"; DESIGN I6). A
// committed refund that Stripe failed for good (refund.failed: the money went back to the merchant, the receipt says
// not_returned) moved nothing, so the facts give its cents back to the payment's cap total and to the approval's
// reserved cents, once per effect: a redelivered event, a re-read finding it failed again and two facts jobs at the
// same moment give nothing back twice (release-failed-3.lua sets its flag in the step that gives back). The approval's
// use stays spent: the new request the `failed_after_landed` alert advises needs a new approval, and then commits. A
// refund that stands, a dispute, or an effect that never committed (a resolving refusal gave its cents back) gives
// nothing back.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { journalOf, type StripeEvent } from '../../src/interlock.js';
import { approvalTerms, sleep } from '../support/harness.js';
import { pay, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

/**
 * A refund of `amount` cents on the payment under a new approval of its own (one use), decided on `refundedByOthers`
 * cents refunded by others; waits for its outcome.
 */
async function refundUnderNewApproval(paymentIntent: string, amount: number, refundedByOthers = 0) {
  const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: amount, maxUses: 1 });
  await rig.stores.approvals.grant(terms);
  const { effectId } = await rig.effects.propose({ requestId: `case-${randomBytes(4).toString('hex')}`, agent: 'support-bot', approval: terms.id, premises: { chargebacks: [], refunded_by_others: refundedByOthers }, effect: { kind: 'refund', paymentIntent, amount, reason: 'requested_by_customer' } });
  const answer = await rig.effects.waitFor(effectId, 15_000);
  return { effectId, approval: terms.id, outcome: answer?.outcome };
}

/** What the payment's cap counts as moved, and what the approval holds: its reserved cents and its uses. */
async function totals(paymentIntent: string, approval: string) {
  const { snapshot } = await rig.stores.approvals.describe(approval);
  return { moved: (await rig.stores.approvals.subjectCap(`payment:${paymentIntent}`)).movedCents, reserved: snapshot?.reservedCents, uses: snapshot?.uses };
}

/** The refund the effect's send made at Stripe, once Stripe has failed it. */
async function failedRefundOf(paymentIntent: string): Promise<string> {
  for (let i = 0; i < 300; i += 1) {
    const [refund] = (await rig.stripe.refunds.list({ payment_intent: paymentIntent })).data;
    if (refund?.status === 'failed') return refund.id;
    await sleep(50);
  }
  throw new Error(`no refund on ${paymentIntent} failed within 15 s`);
}

/** The refund.failed event Stripe sent for the refund, as a redelivery (or a second job) would carry it. */
async function refundFailedEvent(refund: string): Promise<StripeEvent> {
  const event = (await rig.stripe.events.list({ type: 'refund.failed', limit: 100 })).data.find((one) => (one.data.object as { id?: string }).id === refund);
  if (event === undefined) throw new Error(`no refund.failed event for ${refund}`);
  return JSON.parse(JSON.stringify(event)) as StripeEvent;
}

describe('a committed refund that Stripe failed, on a capped payment', () => {
  it('gives its cents back to the payment cap and the approval once, however often its failure is read again, and the new request the alert advises commits', async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_refundFail', 10_000);
    await rig.stores.approvals.setSubjectCap(`payment:${paymentIntent}`, 3_000);
    const first = await refundUnderNewApproval(paymentIntent, 3_000);
    expect(first.outcome).toBe('COMMITTED');
    const refund = await failedRefundOf(paymentIntent);
    await rig.until(first.effectId, (verification) => verification.finalMoney.status === 'not_returned', 30_000);
    await rig.sandbox.control.idle();
    await rig.drained();
    expect((await rig.stores.alerts.list()).filter((alert) => alert.effectId === first.effectId).map((alert) => alert.kind)).toEqual(['failed_after_landed']);
    // The cents are back; the approval's one use stays spent.
    expect(await totals(paymentIntent, first.approval)).toEqual({ moved: 0, reserved: 0, uses: 1 });

    // The event delivered again (a retried job), twice at once, and the reconciler's re-reads meanwhile.
    const failed = await refundFailedEvent(refund);
    await Promise.all([rig.facts.applyEvent(failed, { again: true }), rig.facts.applyEvent(failed, { again: true }), rig.facts.reread(first.effectId), rig.facts.reread(first.effectId)]);
    await rig.facts.applyEvent(failed, { again: true });
    expect(await totals(paymentIntent, first.approval)).toEqual({ moved: 0, reserved: 0, uses: 1 });

    // As the alert advises: a new request under a new approval. It fits the cap again.
    const second = await refundUnderNewApproval(paymentIntent, 3_000);
    expect(second.outcome).toBe('COMMITTED');
    // This card fails that one too: each effect gives back its own cents, once.
    await rig.until(second.effectId, (verification) => verification.finalMoney.status === 'not_returned', 30_000);
    await rig.sandbox.control.idle();
    await rig.drained();
    await rig.facts.reread(second.effectId);
    expect(await totals(paymentIntent, second.approval)).toEqual({ moved: 0, reserved: 0, uses: 1 });
    expect(await totals(paymentIntent, first.approval)).toEqual({ moved: 0, reserved: 0, uses: 1 });
  }, 60_000);

  it('two facts jobs that find it failed at the same moment give it back once, and its queued events after them nothing more', async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_refundFail', 10_000);
    await rig.stores.approvals.setSubjectCap(`payment:${paymentIntent}`, 3_000);
    await rig.stopFactsWorker();
    let first: Awaited<ReturnType<typeof refundUnderNewApproval>>;
    try {
      first = await refundUnderNewApproval(paymentIntent, 3_000);
      expect(first.outcome).toBe('COMMITTED');
      const refund = await failedRefundOf(paymentIntent);
      await rig.sandbox.control.idle();
      // Nothing applied yet: the facts worker is down, its events wait in the queue.
      expect(await totals(paymentIntent, first.approval)).toEqual({ moved: 3_000, reserved: 3_000, uses: 1 });
      const failed = await refundFailedEvent(refund);
      await Promise.all([rig.facts.applyEvent(failed), rig.facts.applyEvent(failed), rig.facts.reread(first.effectId)]);
      expect(await totals(paymentIntent, first.approval)).toEqual({ moved: 0, reserved: 0, uses: 1 });
    } finally {
      rig.startFactsWorker();
    }
    await rig.drained();
    expect((await rig.receipt(first.effectId)).finalMoney.status).toBe('not_returned');
    expect(await totals(paymentIntent, first.approval)).toEqual({ moved: 0, reserved: 0, uses: 1 });
  }, 60_000);
});

describe('facts that say no refund of the gate failed give nothing back', () => {
  it('a refund that stands, and a dispute on its charge, keep its cents on the cap: the next request is still over it', async () => {
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    await rig.stores.approvals.setSubjectCap(`payment:${paymentIntent}`, 3_000);
    const first = await refundUnderNewApproval(paymentIntent, 3_000);
    expect(first.outcome).toBe('COMMITTED');
    const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'inquiry' });
    await rig.sandbox.control.idle();
    await rig.drained();
    await rig.facts.reread(first.effectId);
    const verification = await rig.receipt(first.effectId);
    expect(verification.finalMoney.status).toBe('returned');
    expect(verification.finalMoney.disputes.map((one) => one.id)).toContain(dispute.id);
    expect(await totals(paymentIntent, first.approval)).toEqual({ moved: 3_000, reserved: 3_000, uses: 1 });
    expect((await refundUnderNewApproval(paymentIntent, 3_000, 3_000)).outcome).toBe('REFUSED:over_cap');
  }, 60_000);

  it('an effect that never committed (Stripe refused its send, and the refusal gave its cents back) gives nothing back again', async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    await rig.stores.approvals.setSubjectCap(`payment:${paymentIntent}`, 3_000);
    await rig.sandbox.control.failNext({ path: '/v1/refunds', method: 'POST', status: 402, code: 'card_declined', message: 'Your card was declined.' });
    const refused = await refundUnderNewApproval(paymentIntent, 3_000);
    expect(refused.outcome).toBe('REFUSED:target_error');
    expect(await totals(paymentIntent, refused.approval)).toEqual({ moved: 0, reserved: 0, uses: 0 });
    const journal = journalOf(rig.stores);
    expect(await journal.releaseFailed(`payment:${paymentIntent}`, refused.effectId, refused.approval, 3_000)).toBe('not_committed');
    expect(await totals(paymentIntent, refused.approval)).toEqual({ moved: 0, reserved: 0, uses: 0 });
  }, 60_000);
});
