// Rule: every `currency` Stripe takes "Must be a supported currency" (OpenAPI 2023-08-16, e.g. POST
// /v1/customers/{customer}/balance_transactions and POST /v1/payment_intents). Any other code, `xyz` or a typo such as
// `uds`, is refused as Stripe refuses it: a 400 invalid_request_error on `currency`, `Invalid currency: xyz. Stripe
// currently supports these currencies: usd, aed, …`, raised while the parameters are read, so nothing runs and nothing
// is stored under the request's idempotency key. A supported code is taken in any case and kept lowercase. The sandbox
// used to take any string, so a credit or a payment in a currency that does not exist succeeded in tests, where real
// Stripe refuses it. Every supported code is an ISO 4217 code, and the zero-decimal ones are among them.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUPPORTED_CURRENCIES, unsupportedCurrencyMessage } from '../core/money.js';
import { expectStripeError, pay, raw, startHarness } from './helpers.js';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

const refusedOnCurrency = async (call: Promise<unknown>, code = 'xyz'): Promise<void> => {
  const error = await expectStripeError(call);
  expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
  expect(error).toMatchObject({ statusCode: 400, rawType: 'invalid_request_error', param: 'currency', message: unsupportedCurrencyMessage(code) });
};

describe('sandbox: a currency Stripe does not support', () => {
  it('refuses a customer balance transaction in it, and the customer keeps no currency', async () => {
    const customer = await h.stripe.customers.create({ email: 'no-such-currency@example.com' });
    await refusedOnCurrency(h.stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'xyz' }));
    await refusedOnCurrency(h.stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'uds' }), 'uds');
    const after = (await h.stripe.customers.retrieve(customer.id)) as Stripe.Customer;
    expect(after).toMatchObject({ currency: null, balance: 0 });
    expect((await h.stripe.customers.listBalanceTransactions(customer.id)).data).toEqual([]);
  });

  it('says which currencies Stripe supports, usd first', async () => {
    const customer = await h.stripe.customers.create({ email: 'currency-message@example.com' });
    const error = await expectStripeError(h.stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'xyz' }));
    expect(error.message).toMatch(/^Invalid currency: xyz\. Stripe currently supports these currencies: usd, aed, afn, /);
    expect(error.code).toBeUndefined();
  });

  it('refuses a PaymentIntent in it, on create and on update, and takes no payment', async () => {
    await refusedOnCurrency(h.stripe.paymentIntents.create({ amount: 1_000, currency: 'xyz', payment_method: 'pm_card_visa', confirm: true }));
    const open = await h.stripe.paymentIntents.create({ amount: 1_000, currency: 'usd' });
    await refusedOnCurrency(h.stripe.paymentIntents.update(open.id, { currency: 'xyz' }));
    expect((await h.stripe.paymentIntents.retrieve(open.id)).currency).toBe('usd');
  });

  it('refuses a price, an invoice item and a refund in it, and list filters by it', async () => {
    await refusedOnCurrency(h.stripe.prices.create({ unit_amount: 500, currency: 'xyz', product_data: { name: 'xyz plan' } }));
    const customer = await h.stripe.customers.create({ email: 'currency-items@example.com' });
    await refusedOnCurrency(h.stripe.invoiceItems.create({ customer: customer.id, amount: 500, currency: 'xyz' }));
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await refusedOnCurrency(h.stripe.refunds.create({ payment_intent: intent.id, amount: 100, currency: 'xyz' }));
    expect((await h.stripe.refunds.list({ payment_intent: intent.id })).data).toEqual([]);
    await refusedOnCurrency(h.stripe.prices.list({ currency: 'xyz' }));
    await refusedOnCurrency(h.stripe.balanceTransactions.list({ currency: 'xyz' }));
  });

  it('refuses it before the endpoint runs: the idempotency key is not stored, and the corrected request runs under it', async () => {
    const customer = await h.stripe.customers.create({ email: 'currency-key@example.com' });
    const path = `/v1/customers/${customer.id}/balance_transactions`;
    const headers = { 'Idempotency-Key': `currency-${customer.id}` };
    const refused = await raw(h.sandbox, 'POST', path, { body: 'amount=-500&currency=xyz', headers });
    expect(refused.status).toBe(400);
    const taken = await raw(h.sandbox, 'POST', path, { body: 'amount=-500&currency=usd', headers });
    expect(taken.status).toBe(200);
    expect(taken.headers.get('idempotent-replayed')).toBeNull();
  });

  it('takes a supported code in any case and keeps it lowercase', async () => {
    const customer = await h.stripe.customers.create({ email: 'currency-case@example.com' });
    const credit = await h.stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'EUR' });
    expect(credit.currency).toBe('eur');
    const { intent } = await pay(h.stripe, 'pm_card_visa', { amount: 500, currency: 'JPY' });
    expect(intent.currency).toBe('jpy');
  });

  it('lists lowercase ISO 4217 codes, once each, the zero-decimal ones among them', () => {
    expect(SUPPORTED_CURRENCIES.every((code) => /^[a-z]{3}$/.test(code))).toBe(true);
    expect(new Set(SUPPORTED_CURRENCIES).size).toBe(SUPPORTED_CURRENCIES.length);
    expect(SUPPORTED_CURRENCIES[0]).toBe('usd');
    for (const code of ['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf', 'eur', 'gbp']) {
      expect(SUPPORTED_CURRENCIES).toContain(code);
    }
  });
});
