// Rule: a list filtered by an id Stripe has no object for answers 404, not an empty list: `resource_missing`,
// `No such <filter>: '<id>'`, `param` the filter's name, as a retrieve of that id would (docs.stripe.com, list refunds:
// "If you provide a non-existent charge ID, this call throws an error"; list charges: the same of a customer ID). It
// holds for every id filter the sandbox supports, and for an id of another type of object (a PaymentIntent's id given as
// `charge`). The sandbox used to answer `{data: []}`, so a caller that takes an empty list for "nothing there" passed
// in tests where real Stripe throws. A known id still lists, an empty list included, and so does a deleted customer:
// Stripe still retrieves it (`deleted: true`), and its credit notes stay listable while its balance transactions 404.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStripeError, pay, raw, startHarness } from './helpers.js';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

/** Each list and id filter the sandbox supports, with an id of the right shape that names nothing. */
const unknownFilters: ReadonlyArray<readonly [path: string, param: string, id: string]> = [
  ['/v1/refunds', 'payment_intent', 'pi_doesnotexist'],
  ['/v1/refunds', 'charge', 'ch_unknown'],
  ['/v1/disputes', 'payment_intent', 'pi_doesnotexist'],
  ['/v1/disputes', 'charge', 'ch_unknown'],
  ['/v1/charges', 'payment_intent', 'pi_doesnotexist'],
  ['/v1/charges', 'customer', 'cus_unknown'],
  ['/v1/payment_intents', 'customer', 'cus_unknown'],
  ['/v1/payment_methods', 'customer', 'cus_unknown'],
  ['/v1/customers', 'test_clock', 'clock_unknown'],
  ['/v1/prices', 'product', 'prod_unknown'],
  ['/v1/subscriptions', 'customer', 'cus_unknown'],
  ['/v1/subscriptions', 'price', 'price_unknown'],
  ['/v1/subscriptions', 'test_clock', 'clock_unknown'],
  ['/v1/invoices', 'customer', 'cus_unknown'],
  ['/v1/invoices', 'subscription', 'sub_unknown'],
  ['/v1/invoiceitems', 'customer', 'cus_unknown'],
  ['/v1/invoiceitems', 'invoice', 'in_unknown'],
  ['/v1/credit_notes', 'customer', 'cus_unknown'],
  ['/v1/credit_notes', 'invoice', 'in_unknown'],
  ['/v1/subscription_items', 'subscription', 'sub_unknown'],
];

const notFound = (param: string, id: string) => ({ type: 'invalid_request_error', code: 'resource_missing', param, message: `No such ${param}: '${id}'` });

/** What the SDK raises for that answer. */
async function expectNotFound(call: Promise<unknown>, param: string, id: string): Promise<void> {
  const error = await expectStripeError(call);
  expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
  expect({ statusCode: error.statusCode, rawType: error.rawType, code: error.code, param: error.param, message: error.message }).toEqual({
    statusCode: 404,
    rawType: 'invalid_request_error',
    code: 'resource_missing',
    param,
    message: `No such ${param}: '${id}'`,
  });
}

describe('sandbox: a list filtered by an id Stripe does not know', () => {
  it.each(unknownFilters)('GET %s?%s=%s answers 404 resource_missing on the filter', async (path, param, id) => {
    const answer = await raw(h.sandbox, 'GET', `${path}?${param}=${id}`);
    expect(answer.status).toBe(404);
    expect(answer.json['error']).toMatchObject(notFound(param, id));
  });

  it('raises the SDK\'s StripeInvalidRequestError, as a retrieve of the id would', async () => {
    await expectNotFound(h.stripe.refunds.list({ payment_intent: 'pi_doesnotexist' }), 'payment_intent', 'pi_doesnotexist');
    await expectNotFound(h.stripe.disputes.list({ payment_intent: 'pi_doesnotexist' }), 'payment_intent', 'pi_doesnotexist');
    await expectNotFound(h.stripe.customers.listBalanceTransactions('cus_unknown'), 'customer', 'cus_unknown');
    const known = await h.stripe.customers.create({ name: 'known' });
    await expectNotFound(h.stripe.customers.listBalanceTransactions(known.id, { invoice: 'in_unknown' }), 'invoice', 'in_unknown');
  });

  it('refuses an id of another kind of object: a PaymentIntent is no charge', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await expectNotFound(h.stripe.refunds.list({ charge: intent.id }), 'charge', intent.id);
  });

  it('lists for a known id, an empty list included', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_visa');
    expect((await h.stripe.refunds.list({ payment_intent: intent.id })).data).toEqual([]);
    expect((await h.stripe.disputes.list({ charge })).data).toEqual([]);
    const refund = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 1_000 });
    expect((await h.stripe.refunds.list({ payment_intent: intent.id })).data.map((r) => r.id)).toEqual([refund.id]);
    expect((await h.stripe.refunds.list({ charge })).data.map((r) => r.id)).toEqual([refund.id]);
    const clock = await h.stripe.testHelpers.testClocks.create({ frozen_time: 1_700_000_000 });
    expect((await h.stripe.customers.list({ test_clock: clock.id })).data).toEqual([]);
    const product = await h.stripe.products.create({ name: 'known product' });
    expect((await h.stripe.prices.list({ product: product.id })).data).toEqual([]);
  });

  it('lists for a deleted customer, whose credit notes stay listable, while its balance transactions 404', async () => {
    const customer = await h.stripe.customers.create({ name: 'to be deleted' });
    await h.stripe.invoiceItems.create({ customer: customer.id, amount: 3_000, currency: 'usd' });
    const invoice = await h.stripe.invoices.finalizeInvoice((await h.stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: 'include' })).id);
    const note = await h.stripe.creditNotes.create({ invoice: invoice.id, amount: 500 });
    await h.stripe.customers.del(customer.id);
    expect((await h.stripe.creditNotes.list({ customer: customer.id })).data.map((n) => n.id)).toEqual([note.id]);
    expect((await h.stripe.invoices.list({ customer: customer.id })).data.map((i) => i.id)).toEqual([invoice.id]);
    await expectNotFound(h.stripe.customers.listBalanceTransactions(customer.id), 'customer', customer.id);
  });
});
