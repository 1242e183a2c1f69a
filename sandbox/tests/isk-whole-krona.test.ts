// Rule: ISK stays two-decimal in Stripe's API (100 is 1 króna), but since 2023-04-14 Stripe takes ISK charges and
// refunds only in whole krónur: an amount not divisible by 100, on a PaymentIntent (create, update, capture) or a
// refund, is refused with 400 invalid_request_error `invalid_charge_amount_no_decimal_compatible` (Stripe support,
// "Deprecation of fractional ISK charges and refunds"), and nothing is charged or refunded. Other two-decimal
// currencies keep every minor unit.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStripeError, pay, startHarness } from './helpers.js';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

const message =
  'Invalid amount. Currency ISK has become effectively zero-decimal and charged amounts must be evenly divisible by 100. See https://stripe.com/docs/currencies#special-cases for more information.';

const refusedAsFractional = async (call: Promise<unknown>, param = 'amount'): Promise<void> => {
  const error = await expectStripeError(call);
  expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
  expect({ status: error.statusCode, type: error.rawType, code: error.code, param: error.param, message: error.message }).toEqual({
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_charge_amount_no_decimal_compatible',
    param,
    message,
  });
};

describe('sandbox: ISK in whole krónur only', () => {
  it('refuses a payment of ISK 50.50 and makes no charge', async () => {
    await refusedAsFractional(h.stripe.paymentIntents.create({ amount: 5_050, currency: 'isk', payment_method: 'pm_card_visa', confirm: true }));
    await refusedAsFractional(h.stripe.paymentIntents.create({ amount: 5_050, currency: 'ISK' }));
    expect((await h.stripe.charges.list({ limit: 100 })).data.filter((charge) => charge.currency === 'isk' && charge.amount === 5_050)).toEqual([]);
  });

  it('takes whole krónur: ISK 100.00 is charged as 10000', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa', { amount: 10_000, currency: 'isk' });
    expect({ status: intent.status, amount: intent.amount, currency: intent.currency }).toEqual({ status: 'succeeded', amount: 10_000, currency: 'isk' });
  });

  it('refuses a refund of ISK 1.50 on a whole-króna payment and refunds nothing, then takes ISK 1.00', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_visa', { amount: 10_000, currency: 'isk' });
    await refusedAsFractional(h.stripe.refunds.create({ payment_intent: intent.id, amount: 150 }));
    await refusedAsFractional(h.stripe.refunds.create({ charge, amount: 9_950 }));
    expect((await h.stripe.refunds.list({ payment_intent: intent.id })).data).toEqual([]);
    expect((await h.stripe.charges.retrieve(charge)).amount_refunded).toBe(0);
    const refund = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 100 });
    expect({ status: refund.status, amount: refund.amount }).toEqual({ status: 'succeeded', amount: 100 });
  });

  it('refuses an update to a fractional ISK amount, or to ISK with a fractional amount, and keeps the intent as it was', async () => {
    const intent = await h.stripe.paymentIntents.create({ amount: 10_000, currency: 'isk' });
    await refusedAsFractional(h.stripe.paymentIntents.update(intent.id, { amount: 10_001 }));
    const usd = await h.stripe.paymentIntents.create({ amount: 1_050, currency: 'usd' });
    await refusedAsFractional(h.stripe.paymentIntents.update(usd.id, { currency: 'isk' }));
    expect((await h.stripe.paymentIntents.retrieve(intent.id)).amount).toBe(10_000);
    expect((await h.stripe.paymentIntents.retrieve(usd.id)).currency).toBe('usd');
  });

  it('refuses capturing a fractional ISK amount and leaves the authorisation to capture', async () => {
    const intent = await h.stripe.paymentIntents.create({ amount: 10_000, currency: 'isk', payment_method: 'pm_card_visa', confirm: true, capture_method: 'manual' });
    await refusedAsFractional(h.stripe.paymentIntents.capture(intent.id, { amount_to_capture: 5_050 }), 'amount_to_capture');
    expect((await h.stripe.paymentIntents.retrieve(intent.id)).status).toBe('requires_capture');
    expect((await h.stripe.paymentIntents.capture(intent.id, { amount_to_capture: 5_000 })).amount_received).toBe(5_000);
  });

  it('keeps every minor unit of the other two-decimal currencies, huf and twd among them', async () => {
    for (const currency of ['usd', 'huf', 'twd']) {
      const { intent } = await pay(h.stripe, 'pm_card_visa', { amount: 5_050, currency });
      expect((await h.stripe.refunds.create({ payment_intent: intent.id, amount: 150 })).amount).toBe(150);
    }
  });
});
