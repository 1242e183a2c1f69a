// RULE: `expand[]` expands only each object's expandable fields and refuses the rest, and paths deeper than 4
// levels, with a 400 invalid_request_error before anything runs. stripe-facts.md §7 (lines 366-367): dotted paths,
// list expansions start with `data.`, "maximum depth **4** levels". Stripe's OpenAPI document lists each object's
// expandable fields (`x-expandableFields`; a refund's: balance_transaction, charge, failure_balance_transaction,
// next_action, payment_intent, source_transfer_reversal, transfer_reversal). The sandbox used to replace any
// id-looking string along any path, ignore unknown fields and cut deeper paths silently, so an expansion the service
// got wrong passed offline and failed against Stripe. Messages as Stripe words them: "This property cannot be
// expanded (data)." and "You cannot expand more than 4 levels of a property." (seen in the wild; see README).
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expandableFields } from '../http/expandable-fields.js';
import { startSandbox } from '../index.js';
import { deriveExpandableFields } from './schema/stripe-schema.js';
import type { Sandbox } from '../index.js';

let sandbox: Sandbox;
let stripe: Stripe;
let refundId: string;
let intentId: string;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, delays: 'fast' });
  stripe = new Stripe('sk_test_expand', { host: sandbox.host, port: sandbox.port, protocol: 'http', maxNetworkRetries: 0 });
  const intent = await stripe.paymentIntents.create({ amount: 5000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
  intentId = intent.id;
  refundId = (await stripe.refunds.create({ payment_intent: intent.id, amount: 100 })).id;
});
afterAll(() => sandbox.close());

const send = async (path: string, init: { method?: string; body?: string } = {}) => {
  const response = await fetch(`${sandbox.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { Authorization: 'Bearer sk_test_expand', 'Content-Type': 'application/x-www-form-urlencoded' },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> & { error?: { type?: string; message?: string } } };
};

describe('sandbox: expand[] of what Stripe does not expand', () => {
  it('refuses a field that is not expandable (refund.id) instead of turning the id into an object', async () => {
    const answer = await send(`/v1/refunds/${refundId}?expand[]=id`);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', message: 'This property cannot be expanded (id).' });
  });

  it('refuses a field the object does not have', async () => {
    const answer = await send(`/v1/refunds/${refundId}?expand[]=no_such_field`);
    expect(answer.status).toBe(400);
    expect(answer.body.error?.message).toBe('This property cannot be expanded (no_such_field).');
  });

  it('refuses a field that is not expandable further down a path', async () => {
    const answer = await send(`/v1/refunds/${refundId}?expand[]=charge.amount`);
    expect(answer.body.error?.message).toBe('This property cannot be expanded (amount).');
  });

  it('refuses a path deeper than 4 levels instead of cutting it silently', async () => {
    const answer = await send(`/v1/refunds/${refundId}?expand[]=charge.payment_intent.latest_charge.payment_intent.latest_charge`);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', message: 'You cannot expand more than 4 levels of a property.' });
  });

  it('refuses a list answer\'s item field that does not start with data.', async () => {
    const answer = await send(`/v1/refunds?expand[]=charge`);
    expect(answer.status).toBe(400);
    expect(answer.body.error?.message).toBe("This property cannot be expanded (charge). You may want to try expanding 'data.charge' instead.");
  });

  it('refuses before the endpoint runs, so a refused create makes nothing', async () => {
    const before = (await stripe.refunds.list({ payment_intent: intentId })).data.length;
    const answer = await send('/v1/refunds', { method: 'POST', body: `payment_intent=${intentId}&amount=100&expand[]=id` });
    expect(answer.status).toBe(400);
    expect((await stripe.refunds.list({ payment_intent: intentId })).data.length).toBe(before);
  });
});

describe('sandbox: expand[] of what Stripe expands', () => {
  it('expands what the service asks for: latest_charge.refunds on a PaymentIntent, refunds on a charge', async () => {
    const intent = await stripe.paymentIntents.retrieve(intentId, { expand: ['latest_charge.refunds'] });
    const charge = intent.latest_charge as Stripe.Charge;
    expect(charge.object).toBe('charge');
    expect(charge.refunds?.data.map((r) => r.id)).toContain(refundId);
    const direct = await stripe.charges.retrieve(charge.id, { expand: ['refunds'] });
    expect(direct.refunds?.data.map((r) => r.id)).toContain(refundId);
  });

  it('expands 4 levels, list items through data., and leaves fields off the path as ids', async () => {
    const refund = await stripe.refunds.retrieve(refundId, { expand: ['charge.payment_intent.latest_charge.balance_transaction'] });
    const charge = refund.charge as Stripe.Charge;
    const latest = (charge.payment_intent as Stripe.PaymentIntent).latest_charge as Stripe.Charge;
    expect((latest.balance_transaction as Stripe.BalanceTransaction).object).toBe('balance_transaction');
    expect(typeof charge.balance_transaction).toBe('string');
    expect(typeof refund.payment_intent).toBe('string');
    const list = await stripe.refunds.list({ payment_intent: intentId, expand: ['data.charge'] });
    expect(list.data.every((r) => typeof r.charge === 'object')).toBe(true);
  });

  it('expands through a nested hash (a customer\'s invoice_settings.default_payment_method)', async () => {
    const customer = await stripe.customers.create({ payment_method: 'pm_card_visa' });
    const method = (await stripe.paymentMethods.list({ customer: customer.id })).data[0]?.id ?? '';
    await stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: method } });
    const read = await stripe.customers.retrieve(customer.id, { expand: ['invoice_settings.default_payment_method'] });
    expect(((read as Stripe.Customer).invoice_settings.default_payment_method as Stripe.PaymentMethod).object).toBe('payment_method');
  });
});

describe('sandbox: the table of expandable fields', () => {
  it('is what Stripe\'s OpenAPI document and the SDK types say (http/expandable-fields.ts has not drifted)', () => {
    expect(expandableFields).toEqual(deriveExpandableFields());
  });
});
