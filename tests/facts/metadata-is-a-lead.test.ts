// A refund's or balance transaction's `interlock_effect_id` metadata can be edited at Stripe, or set by hand on an
// object the gate never made: it leads the facts to an effect, it does not prove the object is that effect's. An object
// is recorded on an effect only when it is what the effect's send made: a refund on the effect's payment (the one the
// effect committed, once it committed one; before, one of the effect's amount), a balance credit of the effect's
// amount. A refund whose metadata was cleared or changed stays its committed effect's, so its failure still reaches
// that receipt.
import { describe, expect, it } from 'vitest';
import { pay, sharedFactsRig } from './facts-rig.js';
import { approvalTerms, sleep } from '../support/harness.js';

const rig = sharedFactsRig();
const alertKinds = async (effectId: string) => (await rig.stores.alerts.list()).filter((alert) => alert.effectId === effectId).map((alert) => alert.kind);

/** A refund effect on its own payment refused before any send (its premises were stale): nothing moved for it. */
async function refusedRefund(amount: number): Promise<{ effectId: string; paymentIntent: string }> {
  const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
  const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: amount });
  await rig.stores.approvals.grant(terms);
  const recorded = await rig.effects.propose({ requestId: `case-refused-${paymentIntent}`, agent: 'support-bot', approval: terms.id, premises: { chargebacks: [], refunded_by_others: 500 }, effect: { kind: 'refund', paymentIntent, amount, reason: 'requested_by_customer' } });
  expect(await rig.effects.waitFor(recorded.effectId, 15_000)).toMatchObject({ outcome: 'REFUSED:stale_premise' });
  return { effectId: recorded.effectId, paymentIntent };
}

describe('effect ids in Stripe metadata are a lead, not proof', () => {
  it("a refund on another payment labelled with a refused effect's id records no landing on it: its receipt still says nothing moved", async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const refundOfA = (await rig.receipt(await rig.refund(paymentIntent, 3_000))).evidence as string;
    const refused = await refusedRefund(3_000);
    await rig.stripe.refunds.update(refundOfA, { metadata: { interlock_effect_id: refused.effectId } });
    await rig.sandbox.control.idle();
    await rig.drained();
    await rig.facts.reread(refused.effectId);
    const receipt = await rig.receipt(refused.effectId);
    expect((await rig.stripe.refunds.list({ payment_intent: refused.paymentIntent })).data).toHaveLength(0);
    expect(receipt).toMatchObject({ happened: false, lateLanding: null, finalMoney: { status: 'not_returned' } });
    expect(await alertKinds(refused.effectId)).not.toContain('late_landing');
  });

  it("a second refund on the same payment labelled with a committed effect's id is not recorded on it: its receipt keeps its own refund", async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const own = (await rig.receipt(effectId)).evidence as string;
    const other = await rig.stripe.refunds.create({ payment_intent: paymentIntent, amount: 1_000, metadata: { interlock_effect_id: effectId } });
    await rig.sandbox.control.request('POST', `/refunds/${other.id}/fail`, { failure_reason: 'expired_or_canceled_card' });
    await rig.sandbox.control.idle();
    await rig.drained();
    await rig.facts.reread(effectId);
    const receipt = await rig.receipt(effectId);
    expect(receipt.valid).toBe(true);
    expect(receipt.finalMoney.refunds.map((refund) => refund.id)).toEqual([own]);
    expect(receipt.finalMoney.status).toBe('returned');
    expect(await alertKinds(effectId)).not.toContain('failed_after_landed');
  });

  it("a refund whose metadata was cleared stays its committed effect's: its failure turns the receipt to not returned, with the alert", async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const refundId = (await rig.receipt(effectId)).evidence as string;
    await rig.stripe.refunds.update(refundId, { metadata: { interlock_effect_id: '' } });
    await rig.sandbox.control.request('POST', `/refunds/${refundId}/fail`, { failure_reason: 'expired_or_canceled_card' });
    await rig.sandbox.control.idle();
    await rig.drained();
    // The reconciler's pass (its event names no effect, so the facts find the effect through its payment).
    await rig.facts.reread(effectId);
    expect((await rig.receipt(effectId)).finalMoney.status).toBe('not_returned');
    expect(await alertKinds(effectId)).toContain('failed_after_landed');
  });

  it.each([
    ['an id no effect has', async () => 'f'.repeat(64)],
    ["an effect on another payment's id", async () => rig.refund((await pay(rig.stripe, 'pm_card_visa', 10_000)).paymentIntent, 1_000)],
  ])("a refund whose metadata was changed to %s stays its committed effect's: its failure event alone turns the receipt to not returned, with the alert", async (_what, otherId) => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const refundId = (await rig.receipt(effectId)).evidence as string;
    await rig.stripe.refunds.update(refundId, { metadata: { interlock_effect_id: await otherId() } });
    await rig.sandbox.control.request('POST', `/refunds/${refundId}/fail`, { failure_reason: 'expired_or_canceled_card' });
    await rig.sandbox.control.idle();
    await rig.drained();
    // No re-read of the effect: the refund.failed event leads through the payment to the effect that committed the refund.
    const receipt = await rig.receipt(effectId);
    expect(receipt.finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'expired_or_canceled_card' });
    expect(receipt.answerMatchesFinalMoney).toBe(false);
    expect(await alertKinds(effectId)).toContain('failed_after_landed');
  });

  it("a refund of another amount on a refused effect's payment, labelled with its id, is not recorded on it: the receipt stays valid and says nothing moved", async () => {
    const refused = await refusedRefund(3_000);
    // Someone refunds $10 by hand on the same payment and copies the effect id into the metadata.
    await rig.stripe.refunds.create({ payment_intent: refused.paymentIntent, amount: 1_000, metadata: { interlock_effect_id: refused.effectId } });
    await rig.sandbox.control.idle();
    await rig.drained();
    await rig.facts.reread(refused.effectId);
    const receipt = await rig.receipt(refused.effectId);
    expect(receipt).toMatchObject({ valid: true, problems: [], happened: false, lateLanding: null, finalMoney: { status: 'not_returned', refunds: [] } });
  });

  it("a debit labelled with a refused credit effect's id is not that credit landing late", async () => {
    const customer = await rig.stripe.customers.create({ name: 'Subscriber' });
    const terms = approvalTerms({ scope: `customer:${customer.id}`, capCents: 1_000 });
    await rig.stores.approvals.grant(terms);
    await rig.sandbox.control.failNext({ path: `/v1/customers/${customer.id}/balance_transactions`, method: 'POST', status: 400, code: 'parameter_invalid_integer', message: 'Invalid integer.' });
    const recorded = await rig.effects.propose({ requestId: `case-debit-${customer.id}`, agent: 'support-bot', approval: terms.id, premises: { subscription_status: null, incident_compensation: 0 }, effect: { kind: 'credit', customer: customer.id, amount: 1_000, incident: 'INC-debit' } });
    expect(await rig.effects.waitFor(recorded.effectId, 15_000)).toMatchObject({ outcome: 'REFUSED:target_error' });
    // The customer is charged $10 (a debit: positive at Stripe), labelled with the effect's id.
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 1_000, currency: 'usd', metadata: { interlock_effect_id: recorded.effectId } });
    await rig.sandbox.control.idle();
    await rig.drained();
    await sleep(100);
    await rig.facts.reread(recorded.effectId);
    const receipt = await rig.receipt(recorded.effectId);
    expect(receipt.lateLanding).toBeNull();
    expect(receipt.finalMoney.status).not.toBe('returned');
  });
});
