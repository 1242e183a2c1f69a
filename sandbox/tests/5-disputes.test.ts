// Issue 3, point 5: disputes — inquiry and chargeback lifecycles, money movements, magic evidence, close, lists.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, expectStripeError, firstDispute, pay, startHarness } from './helpers.js';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

const disputeOf = (id: string) => () => h.stripe.disputes.retrieve(id);

describe('5. disputes', () => {
  it('an inquiry has no withdrawal, stays refundable, case_type inquiry, network reason 10', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_createDisputeInquiry');
    const dispute = await firstDispute(h.stripe, intent.id);
    expect(dispute).toMatchObject({ object: 'dispute', status: 'warning_needs_response', amount: 10_000, charge, payment_intent: intent.id, balance_transactions: [], is_charge_refundable: true, reason: 'fraudulent', network_reason_code: '10' });
    expect(dispute.id).toMatch(/^du_/);
    expect(dispute.payment_method_details?.card?.case_type).toBe('inquiry');
  });

  it('a chargeback withdraws amount plus the dispute fee: adjustment "Chargeback withdrawal for ch_…"', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_createDispute', { amount: 4_200 });
    const dispute = await firstDispute(h.stripe, intent.id);
    expect(dispute).toMatchObject({ status: 'needs_response', is_charge_refundable: false, network_reason_code: '10.4' });
    expect(dispute.payment_method_details?.card?.case_type).toBe('chargeback');
    expect(dispute.balance_transactions).toHaveLength(1);
    expect(dispute.balance_transactions[0]).toMatchObject({ amount: -4_200, fee: 1_500, net: -5_700, type: 'adjustment', description: `Chargeback withdrawal for ${charge}` });
    expect(dispute.balance_transactions[0]?.fee_details[0]?.description).toBe('Dispute fee');
  });

  it('product_not_received carries reason product_not_received and network reason 13.1', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_createDisputeProductNotReceived');
    expect(await firstDispute(h.stripe, intent.id)).toMatchObject({ reason: 'product_not_received', network_reason_code: '13.1', status: 'needs_response' });
  });

  it('inquiry: evidence submitted moves warning_needs_response → warning_under_review; winning_evidence ends warning_closed', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_createDisputeInquiry');
    const dispute = await firstDispute(h.stripe, intent.id);
    const submitted = await h.stripe.disputes.update(dispute.id, { evidence: { uncategorized_text: 'winning_evidence' }, submit: true });
    expect(submitted.status).toBe('warning_under_review');
    expect(submitted.evidence_details).toMatchObject({ has_evidence: true, submission_count: 1 });
    await eventually(disputeOf(dispute.id), (d) => d.status === 'warning_closed');
  });

  it('chargeback: winning_evidence answers under_review, then won with the reinstatement; refunds work again', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_createDispute');
    const dispute = await firstDispute(h.stripe, intent.id);
    const submitted = await h.stripe.disputes.update(dispute.id, { evidence: { uncategorized_text: 'winning_evidence' } });
    expect(submitted.status).toBe('under_review');
    const won = await eventually(disputeOf(dispute.id), (d) => d.status === 'won');
    expect(won.is_charge_refundable).toBe(true);
    expect(won.balance_transactions.map((t) => t.amount)).toEqual([-10_000, 10_000]);
    expect(won.balance_transactions[1]?.description).toBe(`Chargeback reversal for ${charge}`);
    expect((await h.stripe.refunds.create({ charge, amount: 500 })).status).toBe('succeeded');
    expect((await h.stripe.charges.retrieve(charge)).disputed).toBe(true);
  });

  it('chargeback: losing_evidence ends lost with no reinstatement', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_createDispute');
    const dispute = await firstDispute(h.stripe, intent.id);
    await h.stripe.disputes.update(dispute.id, { evidence: { uncategorized_text: 'losing_evidence' }, submit: true });
    const lost = await eventually(disputeOf(dispute.id), (d) => d.status === 'lost');
    expect(lost.balance_transactions.map((t) => t.amount)).toEqual([-10_000]);
    expect(lost.is_charge_refundable).toBe(false);
  });

  it('plain evidence moves to under_review and never settles by itself; submit=false only stages it', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_createDispute');
    const dispute = await firstDispute(h.stripe, intent.id);
    const staged = await h.stripe.disputes.update(dispute.id, { evidence: { product_description: 'A blender' }, submit: false });
    expect(staged.status).toBe('needs_response');
    expect(staged.evidence.product_description).toBe('A blender');
    expect(staged.evidence_details).toMatchObject({ has_evidence: true, submission_count: 0 });
    const submitted = await h.stripe.disputes.update(dispute.id, { evidence: { customer_name: 'Ada' } });
    expect(submitted.status).toBe('under_review');
    expect(submitted.evidence).toMatchObject({ product_description: 'A blender', customer_name: 'Ada' });
  });

  it('escalate_inquiry_evidence escalates the inquiry to a chargeback under the same dispute id', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_createDisputeInquiry');
    const inquiry = await firstDispute(h.stripe, intent.id);
    const submitted = await h.stripe.disputes.update(inquiry.id, { evidence: { uncategorized_text: 'escalate_inquiry_evidence' }, submit: true });
    expect(submitted.status).toBe('warning_under_review');
    const escalated = await eventually(disputeOf(inquiry.id), (d) => d.status === 'needs_response');
    expect(escalated.id).toBe(inquiry.id);
    expect(escalated.is_charge_refundable).toBe(false);
    expect(escalated.payment_method_details?.card?.case_type).toBe('chargeback');
    expect(escalated.balance_transactions.map((t) => t.amount)).toEqual([-10_000]);
    expect(await h.stripe.disputes.list({ payment_intent: intent.id })).toMatchObject({ data: [{ id: inquiry.id }] });
  });

  it('close accepts the chargeback: lost at once; a closed dispute refuses updates and close', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_createDispute');
    const dispute = await firstDispute(h.stripe, intent.id);
    expect((await h.stripe.disputes.close(dispute.id)).status).toBe('lost');
    const again = await expectStripeError(h.stripe.disputes.close(dispute.id));
    expect(again).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(again.message).toBe('This dispute is already closed');
    const update = await expectStripeError(h.stripe.disputes.update(dispute.id, { metadata: { a: 'b' } }));
    expect(update.message).toBe('This dispute is already closed');
  });

  it('closing an inquiry ends warning_closed', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_createDisputeInquiry');
    const dispute = await firstDispute(h.stripe, intent.id);
    expect((await h.stripe.disputes.close(dispute.id)).status).toBe('warning_closed');
  });

  it('a missing dispute is 404 with param dispute', async () => {
    const error = await expectStripeError(h.stripe.disputes.retrieve('du_missing'));
    expect(error).toMatchObject({ statusCode: 404, code: 'resource_missing', param: 'dispute', message: "No such dispute: 'du_missing'" });
  });

  it('lists disputes by charge and by payment_intent; evidence_details.due_by is about 8 days out', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_createDispute');
    const dispute = await firstDispute(h.stripe, intent.id);
    expect((await h.stripe.disputes.list({ charge })).data.map((d) => d.id)).toEqual([dispute.id]);
    const days = ((dispute.evidence_details.due_by ?? 0) - dispute.created) / 86_400;
    expect(days).toBeGreaterThan(7.9);
    expect(days).toBeLessThan(9);
  });

  it('the control API opens a dispute on any charge', async () => {
    const { charge } = await pay(h.stripe, 'pm_card_visa');
    const opened = await h.sandbox.control.openDispute({ charge, kind: 'inquiry' });
    expect((await h.stripe.disputes.retrieve(opened.id)).status).toBe('warning_needs_response');
    expect((await h.stripe.charges.retrieve(charge)).disputed).toBe(true);
  });
});
