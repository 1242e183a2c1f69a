// Rule: Stripe charges between its minimum ($0.50 US or equivalent in charge currency) and eight digits in the
// smallest unit (OpenAPI POST /v1/payment_intents `amount`); below it a PaymentIntent is refused with 400
// `amount_too_small`, above it with 400 `amount_too_large` (stripe-facts §2, §4.5), on create and on update. The
// sandbox assumes 50 of the smallest unit in every currency (sandbox/core/money.ts MIN_CHARGE_AMOUNT).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStripeError, startHarness } from './helpers.js';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

describe('payment amount bounds', () => {
  it('refuses a usd payment under $0.50 with amount_too_small and makes nothing', async () => {
    const error = await expectStripeError(h.stripe.paymentIntents.create({ amount: 49, currency: 'usd', payment_method: 'pm_card_visa', confirm: true }));
    expect({ status: error.statusCode, type: error.type, code: error.code, param: error.param, message: error.message }).toEqual({
      status: 400,
      type: 'StripeInvalidRequestError',
      code: 'amount_too_small',
      param: 'amount',
      message: 'Amount must be at least $0.50 usd',
    });
    expect((await h.stripe.charges.list({ limit: 100 })).data.filter((charge) => charge.amount === 49)).toEqual([]);
  });

  it('refuses a usd payment of nine digits with amount_too_large', async () => {
    const error = await expectStripeError(h.stripe.paymentIntents.create({ amount: 100_000_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true }));
    expect({ status: error.statusCode, code: error.code, param: error.param, message: error.message }).toEqual({
      status: 400,
      code: 'amount_too_large',
      param: 'amount',
      message: 'Amount must be no more than $999,999.99',
    });
  });

  it('takes the bounds themselves: $0.50 and $999,999.99', async () => {
    const low = await h.stripe.paymentIntents.create({ amount: 50, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
    const high = await h.stripe.paymentIntents.create({ amount: 99_999_999, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
    expect([low.status, high.status]).toEqual(['succeeded', 'succeeded']);
  });

  it('counts a zero-decimal currency in whole units: ¥49 is refused, ¥50 taken', async () => {
    const error = await expectStripeError(h.stripe.paymentIntents.create({ amount: 49, currency: 'jpy' }));
    expect({ code: error.code, message: error.message }).toEqual({ code: 'amount_too_small', message: 'Amount must be at least ¥50 jpy' });
    expect((await h.stripe.paymentIntents.create({ amount: 50, currency: 'jpy' })).amount).toBe(50);
  });

  it('refuses an update to an amount out of bounds and keeps the amount', async () => {
    const intent = await h.stripe.paymentIntents.create({ amount: 1_000, currency: 'usd' });
    const error = await expectStripeError(h.stripe.paymentIntents.update(intent.id, { amount: 10 }));
    expect({ status: error.statusCode, code: error.code }).toEqual({ status: 400, code: 'amount_too_small' });
    expect((await h.stripe.paymentIntents.retrieve(intent.id)).amount).toBe(1_000);
  });
});
