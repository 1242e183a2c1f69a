// Issue 3, point 4: refunds, their refusals, statuses and lists.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, expectStripeError, firstDispute, pay, startHarness } from './helpers.js';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

const refundOf = (id: string) => () => h.stripe.refunds.retrieve(id);

describe('4. refunds', () => {
  it('refunds partially, then the remainder by default, and marks the charge refunded only when full', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_visa');
    const partial = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 3_000, reason: 'requested_by_customer', metadata: { case: 'c-1' } });
    expect(partial).toMatchObject({ object: 'refund', amount: 3_000, status: 'succeeded', charge, payment_intent: intent.id, reason: 'requested_by_customer', metadata: { case: 'c-1' } });
    expect(partial.balance_transaction).toMatch(/^txn_/);
    expect(await h.stripe.charges.retrieve(charge)).toMatchObject({ amount_refunded: 3_000, refunded: false });
    const rest = await h.stripe.refunds.create({ charge });
    expect(rest.amount).toBe(7_000);
    expect(await h.stripe.charges.retrieve(charge)).toMatchObject({ amount_refunded: 10_000, refunded: true });
  });

  it('updates only metadata on a refund', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    const refund = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 100, metadata: { a: '1', b: '2' } });
    const updated = await h.stripe.refunds.update(refund.id, { metadata: { a: '', c: '3' } });
    expect(updated.metadata).toEqual({ b: '2', c: '3' });
  });

  it('holds the 50-key metadata limit on what the refund would end up with: adding a 51st key is refused, swapping one is not', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']));
    const refund = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 100, metadata: fifty });
    const error = await expectStripeError(h.stripe.refunds.update(refund.id, { metadata: { extra: 'x' } }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(error).toMatchObject({ statusCode: 400, param: 'metadata' });
    expect(error.message).toMatch(/at most 50 keys in metadata.*51/);
    expect(Object.keys((await h.stripe.refunds.retrieve(refund.id)).metadata ?? {})).toHaveLength(50);
    const swapped = await h.stripe.refunds.update(refund.id, { metadata: { k0: '', extra: 'x' } });
    expect(Object.keys(swapped.metadata ?? {})).toHaveLength(50);
    expect(swapped.metadata).toMatchObject({ extra: 'x', k49: 'v' });
  });

  it('refuses a charge that is already fully refunded with charge_already_refunded', async () => {
    const { charge } = await pay(h.stripe, 'pm_card_visa');
    await h.stripe.refunds.create({ charge });
    const error = await expectStripeError(h.stripe.refunds.create({ charge }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(error.code).toBe('charge_already_refunded');
    expect(error.message).toBe(`Charge ${charge} has already been refunded.`);
  });

  it('refuses more than the unrefunded remainder, naming both amounts, with param amount and no code', async () => {
    const { charge } = await pay(h.stripe, 'pm_card_visa', { amount: 5_000 });
    await h.stripe.refunds.create({ charge, amount: 2_000 });
    const error = await expectStripeError(h.stripe.refunds.create({ charge, amount: 4_000 }));
    expect(error.statusCode).toBe(400);
    expect(error.message).toBe('Refund amount ($40.00) is greater than unrefunded amount on charge ($30.00)');
    expect(error.param).toBe('amount');
    expect(error.code).toBeUndefined();
  });

  it('formats the over-refund message in the charge currency (€)', async () => {
    const { charge } = await pay(h.stripe, 'pm_card_visa', { amount: 1_000, currency: 'eur' });
    const error = await expectStripeError(h.stripe.refunds.create({ charge, amount: 1_500 }));
    expect(error.message).toBe('Refund amount (€15.00) is greater than unrefunded amount on charge (€10.00)');
  });

  it('refuses a charged-back charge with 400 charge_disputed', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_createDispute');
    await firstDispute(h.stripe, intent.id);
    const error = await expectStripeError(h.stripe.refunds.create({ charge, amount: 2_000 }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(error.statusCode).toBe(400);
    expect(error.code).toBe('charge_disputed');
    expect(error.message).toBe(`Charge ${charge} has been charged back; cannot issue a refund.`);
  });

  it('refuses invalid requests with Stripe’s messages', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    const zero = await expectStripeError(h.stripe.refunds.create({ payment_intent: intent.id, amount: 0 }));
    expect(zero).toMatchObject({ code: 'parameter_invalid_integer', param: 'amount', message: 'This value must be greater than or equal to 1.' });
    const neither = await expectStripeError(h.stripe.refunds.create({}));
    expect(neither.message).toBe('One of the following params should be provided for this request: payment_intent or charge.');
    const reason = await expectStripeError(h.stripe.refunds.create({ payment_intent: intent.id, reason: 'bored' as Stripe.RefundCreateParams.Reason }));
    expect(reason).toMatchObject({ param: 'reason', message: 'Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer' });
    const missing = await expectStripeError(h.stripe.refunds.create({ charge: 'ch_nope' }));
    expect(missing).toMatchObject({ statusCode: 404, code: 'resource_missing', message: "No such charge: 'ch_nope'" });
    const unpaid = await h.stripe.paymentIntents.create({ amount: 500, currency: 'usd' });
    const noCharge = await expectStripeError(h.stripe.refunds.create({ payment_intent: unpaid.id }));
    expect(noCharge.message).toBe(`This PaymentIntent (${unpaid.id}) does not have a successful charge to refund.`);
  });

  it('refuses a partial refund of an uncaptured charge', async () => {
    const { charge } = await pay(h.stripe, 'pm_card_visa', { capture_method: 'manual' });
    const error = await expectStripeError(h.stripe.refunds.create({ charge, amount: 100 }));
    expect(error.param).toBe('amount');
    expect(error.message).toMatch(/^You cannot partially refund an uncaptured charge/);
  });

  it('pm_card_pendingRefund: the refund starts pending, then succeeds', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_pendingRefund');
    const refund = await h.stripe.refunds.create({ payment_intent: intent.id });
    expect(refund.status).toBe('pending');
    expect(refund.pending_reason).toBe('processing');
    const settled = await eventually(refundOf(refund.id), (r) => r.status === 'succeeded');
    expect(settled.pending_reason).toBeUndefined();
  });

  it('pm_card_refundFail: the refund reads succeeded, then failed with expired_or_canceled_card and the money returns', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_refundFail');
    const refund = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 4_000 });
    expect(refund.status).toBe('succeeded');
    const failed = await eventually(refundOf(refund.id), (r) => r.status === 'failed');
    expect(failed.failure_reason).toBe('expired_or_canceled_card');
    expect(failed.failure_balance_transaction).toMatch(/^txn_/);
    expect(await h.stripe.charges.retrieve(charge)).toMatchObject({ amount_refunded: 0, refunded: false });
  });

  it('requires_action refunds can be canceled; any other status cannot', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_visa');
    const refund = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 1_000 });
    const unsupported = await expectStripeError(h.stripe.refunds.cancel(refund.id));
    expect(unsupported.message).toBe('Canceling this refund is unsupported.');
    await h.sandbox.control.request('POST', `/refunds/${refund.id}/require_action`);
    expect((await h.stripe.refunds.retrieve(refund.id)).status).toBe('requires_action');
    const canceled = await h.stripe.refunds.cancel(refund.id);
    expect(canceled.status).toBe('canceled');
    expect((await h.stripe.charges.retrieve(charge)).amount_refunded).toBe(0);
  });

  it('the expire test helper ends a requires_action refund', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_pendingRefund');
    const refund = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 1_000 });
    await h.sandbox.control.request('POST', `/refunds/${refund.id}/require_action`);
    expect((await h.stripe.testHelpers.refunds.expire(refund.id)).status).toBe('canceled');
  });

  it('the control API can fail a pending refund with a chosen failure_reason', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_pendingRefund');
    const refund = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 1_000 });
    await h.sandbox.control.request('POST', `/refunds/${refund.id}/fail`, { failure_reason: 'insufficient_funds' });
    expect(await h.stripe.refunds.retrieve(refund.id)).toMatchObject({ status: 'failed', failure_reason: 'insufficient_funds' });
  });

  it('lists by charge and by payment_intent, newest first, paginated with limit, starting_after and has_more', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_visa');
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push((await h.stripe.refunds.create({ charge, amount: 100, metadata: { n: String(i) } })).id);
    const newestFirst = [...created].reverse();
    const page1 = await h.stripe.refunds.list({ payment_intent: intent.id, limit: 2 });
    expect(page1.data.map((r) => r.id)).toEqual(newestFirst.slice(0, 2));
    expect(page1.has_more).toBe(true);
    const page2 = await h.stripe.refunds.list({ payment_intent: intent.id, limit: 2, starting_after: page1.data[1]!.id });
    expect(page2.data.map((r) => r.id)).toEqual(newestFirst.slice(2, 4));
    const page3 = await h.stripe.refunds.list({ charge, limit: 2, starting_after: page2.data[1]!.id });
    expect(page3.data.map((r) => r.id)).toEqual(newestFirst.slice(4));
    expect(page3.has_more).toBe(false);
    const all: string[] = [];
    for await (const refund of h.stripe.refunds.list({ charge, limit: 2 })) all.push(refund.id);
    expect(all).toEqual(newestFirst);
  });

  it('refuses a list given both cursors (a page follows one object or precedes one), as Stripe does', async () => {
    const { charge } = await pay(h.stripe, 'pm_card_visa');
    const older = await h.stripe.refunds.create({ charge, amount: 100 });
    const newer = await h.stripe.refunds.create({ charge, amount: 100 });
    const error = await expectStripeError(h.stripe.refunds.list({ charge, starting_after: newer.id, ending_before: older.id }));
    expect(error).toMatchObject({ statusCode: 400, type: 'StripeInvalidRequestError', message: 'Received both starting_after and ending_before parameters. Please pass in only one.' });
  });

  it('finds a refund by metadata through the list, as the gate’s lookup does', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await h.stripe.refunds.create({ payment_intent: intent.id, amount: 100, metadata: { effect: 'other' } });
    const mine = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 200, metadata: { effect: 'eff-42' } });
    const listed = await h.stripe.refunds.list({ payment_intent: intent.id, limit: 100 });
    expect(listed.data.filter((r) => r.metadata?.['effect'] === 'eff-42').map((r) => r.id)).toEqual([mine.id]);
  });

  it('serves the legacy charge-scoped routes and expand[]=refunds on the charge', async () => {
    const { charge } = await pay(h.stripe, 'pm_card_visa');
    const refund = await h.stripe.refunds.create({ charge, amount: 100 });
    const expanded = await h.stripe.charges.retrieve(charge, { expand: ['refunds'] });
    expect(expanded.refunds?.data.map((r) => r.id)).toEqual([refund.id]);
    expect(expanded.refunds?.url).toBe(`/v1/charges/${charge}/refunds`);
  });

  it('a refund younger than the window when a chargeback posts fails with charge_for_pending_refund_disputed', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_createDisputeInquiry');
    const inquiry = await firstDispute(h.stripe, intent.id);
    const refund = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 2_000 });
    await h.sandbox.control.request('POST', `/disputes/${inquiry.id}/escalate`);
    expect(await h.stripe.refunds.retrieve(refund.id)).toMatchObject({ status: 'failed', failure_reason: 'charge_for_pending_refund_disputed' });
    expect((await h.stripe.charges.retrieve(charge)).amount_refunded).toBe(0);
  });

  it('the window is configurable: with a 5 s window a 6 s old refund stands', async () => {
    await h.sandbox.control.configure({ pending_refund_dispute_window_seconds: 5 });
    try {
      const { intent } = await pay(h.stripe, 'pm_card_createDisputeInquiry');
      const inquiry = await firstDispute(h.stripe, intent.id);
      const refund = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 2_000 });
      await h.sandbox.control.advanceClock(6);
      await h.sandbox.control.request('POST', `/disputes/${inquiry.id}/escalate`);
      expect((await h.stripe.refunds.retrieve(refund.id)).status).toBe('succeeded');
    } finally {
      await h.sandbox.control.configure({ pending_refund_dispute_window_seconds: 60 });
    }
  });
});
