// Issue 7, point 3: every answer the sandbox gives has Stripe's shape. A driven sequence through the official SDK
// reaches every endpoint the sandbox serves (checked against its route table), and each response body is
// validated with ajv against the merged OpenAPI (2023-08-16) + stripe-node (pinned version) schema of its object:
// required fields present, null where Stripe sends null, enums within Stripe's values, ids where not expanded,
// and no field Stripe does not have. Events are checked with their `data.object`; lists item by item; errors
// against Stripe's error envelope. Relaxations are listed in sandbox/README.md.
import { Ajv2020 } from 'ajv/dist/2020.js';
import type Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../index.js';
import { expectStripeError, stripeFor } from './helpers.js';
import { deletedSdkTypes, loadStripeSchemas, sdkTypes } from './schema/stripe-schema.js';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { ApiResponseRecord, Sandbox } from '../index.js';
import type { ExpandMode, StripeSchemas } from './schema/stripe-schema.js';

/** Routes that are not part of Stripe's public API, so neither the OpenAPI document nor the SDK describes them. */
const undocumented = new Set(['POST /v1/stripecli/sessions']);

let sandbox: Sandbox;
let stripe: Stripe;
let schemas: StripeSchemas;
const records: ApiResponseRecord[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, delays: 'fast', onApiResponse: (record) => records.push(record) });
  stripe = stripeFor(sandbox, { maxNetworkRetries: 0 });
  schemas = loadStripeSchemas();
});
afterAll(() => sandbox.close());

const ajv = new Ajv2020({ allErrors: true, strict: false, verbose: true });
const validators = new Map<string, ValidateFunction>();
function validatorFor(sdkType: string, mode: ExpandMode): ValidateFunction {
  const key = `${sdkType}|${mode}`;
  let validate = validators.get(key);
  if (validate === undefined) {
    validate = ajv.compile(schemas.schemaFor(sdkType, mode));
    validators.set(key, validate);
  }
  return validate;
}

/** Every fault of one Stripe object (and the objects it carries: list items, an event's data.object). */
function faultsOf(value: unknown, mode: ExpandMode, where: string): string[] {
  if (typeof value !== 'object' || value === null) return [`${where}: not an object`];
  const object = (value as { object?: unknown }).object;
  if (object === 'list') {
    const { data, ...envelope } = value as { data?: unknown };
    const faults = Object.keys(envelope).every((k) => ['object', 'has_more', 'url', 'total_count'].includes(k)) && Array.isArray(data) ? [] : [`${where}: not a list envelope`];
    return [...faults, ...(Array.isArray(data) ? data.flatMap((item, i) => faultsOf(item, mode, `${where}.data[${i}]`)) : [])];
  }
  const deleted = (value as { deleted?: unknown }).deleted === true;
  const sdkType = typeof object === 'string' ? (deleted ? deletedSdkTypes[object] : sdkTypes[object]) : undefined;
  if (sdkType === undefined) return [`${where}: no schema for object ${String(object)}${deleted ? ' (deleted)' : ''}`];
  const validate = validatorFor(sdkType, mode);
  const faults = validate(value) ? [] : (validate.errors ?? []).map((e) => `${where} ${String(object)}${e.instancePath} ${explain(e)}`);
  // An event's payload is what webhook handlers read: it must be a valid, unexpanded object too.
  if (object === 'event') faults.push(...faultsOf((value as { data: { object: unknown } }).data.object, 'ids', `${where}.data.object`));
  return faults;
}

/** One line per fault: what Stripe wants, and what the sandbox sent where that is short. */
function explain(error: ErrorObject): string {
  switch (error.keyword) {
    case 'required':
      return `lacks required ${String(error.params['missingProperty'])}`;
    case 'additionalProperties':
      return `has ${String(error.params['additionalProperty'])}, which Stripe does not`;
    case 'enum':
      return `is ${JSON.stringify(error.data)}, not one of Stripe's values`;
    default:
      return `${error.message ?? error.keyword} (got ${JSON.stringify(error.data)?.slice(0, 80) ?? 'undefined'})`;
  }
}

const errorValidator = (): ValidateFunction => {
  let validate = validators.get('error');
  if (validate === undefined) {
    validate = ajv.compile(schemas.errorSchema());
    validators.set('error', validate);
  }
  return validate;
};

function recordFaults(record: ApiResponseRecord): string[] {
  const where = `${record.method} ${record.route ?? record.path} (${record.status})`;
  const body = JSON.parse(record.body) as unknown;
  if (record.status !== 200) {
    const validate = errorValidator();
    return validate(body) ? [] : (validate.errors ?? []).map((e) => `${where} error${e.instancePath} ${explain(e)}`);
  }
  return faultsOf(body, record.expand.length === 0 ? 'ids' : 'expanded', where);
}

async function drive(): Promise<void> {
  // Payments, charges, refunds, disputes, balance transactions.
  const intent = await stripe.paymentIntents.create({ amount: 5_000, currency: 'usd', description: 'schema', metadata: { k: 'v' } });
  await stripe.paymentIntents.update(intent.id, { description: 'schema, updated' });
  await stripe.paymentIntents.confirm(intent.id, { payment_method: 'pm_card_visa' });
  await stripe.paymentIntents.retrieve(intent.id);
  await stripe.paymentIntents.retrieve(intent.id, { expand: ['latest_charge', 'payment_method'] });
  await stripe.paymentIntents.list({ limit: 3 });
  const manual = await stripe.paymentIntents.create({ amount: 3_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true, capture_method: 'manual' });
  await stripe.paymentIntents.capture(manual.id, { amount_to_capture: 2_000 });
  const canceled = await stripe.paymentIntents.create({ amount: 1_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true, capture_method: 'manual' });
  await stripe.paymentIntents.cancel(canceled.id, { cancellation_reason: 'requested_by_customer' });
  await expectStripeError(stripe.paymentIntents.create({ amount: 1_000, currency: 'usd', payment_method: 'pm_card_chargeDeclined', confirm: true }));
  const charge = String((await stripe.paymentIntents.retrieve(intent.id)).latest_charge);
  await stripe.charges.retrieve(charge);
  await stripe.charges.retrieve(charge, { expand: ['balance_transaction', 'refunds'] });
  await stripe.charges.update(charge, { metadata: { order: '1' } });
  await stripe.charges.list({ payment_intent: intent.id });
  const refund = await stripe.refunds.create({ payment_intent: intent.id, amount: 500, reason: 'requested_by_customer' });
  await stripe.refunds.retrieve(refund.id);
  await stripe.refunds.update(refund.id, { metadata: { order_id: '6735' } });
  await stripe.refunds.list({ charge });
  await stripe.rawRequest('GET', `/v1/charges/${charge}/refunds`);
  await stripe.rawRequest('GET', `/v1/charges/${charge}/refunds/${refund.id}`);
  await stripe.rawRequest('POST', `/v1/charges/${charge}/refunds`, { amount: 100 });
  await stripe.rawRequest('POST', `/v1/charges/${charge}/refund`, { amount: 100 });
  const pending = await stripe.refunds.create({ payment_intent: intent.id, amount: 100 });
  await sandbox.control.request('POST', `/refunds/${pending.id}/require_action`);
  await stripe.refunds.cancel(pending.id);
  const expiring = await stripe.refunds.create({ payment_intent: intent.id, amount: 100 });
  await sandbox.control.request('POST', `/refunds/${expiring.id}/require_action`);
  await stripe.testHelpers.refunds.expire(expiring.id);
  const failing = await stripe.refunds.create({ payment_intent: intent.id, amount: 100 });
  await sandbox.control.request('POST', `/refunds/${failing.id}/fail`, { failure_reason: 'expired_or_canceled_card' });
  await stripe.refunds.retrieve(failing.id);
  await stripe.balanceTransactions.list({ limit: 5 });
  const txn = (await stripe.charges.retrieve(charge)).balance_transaction;
  await stripe.balanceTransactions.retrieve(String(txn));

  const disputed = await stripe.paymentIntents.create({ amount: 4_200, currency: 'usd', payment_method: 'pm_card_createDispute', confirm: true });
  const [chargeback] = (await stripe.disputes.list({ payment_intent: disputed.id })).data;
  if (chargeback === undefined) throw new Error('no chargeback');
  await stripe.disputes.retrieve(chargeback.id);
  await stripe.disputes.update(chargeback.id, { evidence: { product_description: 'a blender' }, submit: false });
  await stripe.rawRequest('GET', `/v1/charges/${String(disputed.latest_charge)}/dispute`);
  await stripe.disputes.close(chargeback.id);
  const inquiry = await stripe.paymentIntents.create({ amount: 10_000, currency: 'usd', payment_method: 'pm_card_createDisputeInquiry', confirm: true });
  const [opened] = (await stripe.disputes.list({ payment_intent: inquiry.id })).data;
  await stripe.disputes.list({ charge: String(inquiry.latest_charge), expand: ['data.charge'] });
  if (opened !== undefined) await stripe.disputes.update(opened.id, { evidence: { uncategorized_text: 'winning_evidence' } });
  await stripe.paymentMethods.retrieve('pm_card_visa');

  // Webhook endpoints and events.
  const endpoint = await stripe.webhookEndpoints.create({ url: 'http://127.0.0.1:9/unused', enabled_events: ['customer.created'], description: 'schema' });
  await stripe.webhookEndpoints.retrieve(endpoint.id);
  await stripe.webhookEndpoints.update(endpoint.id, { disabled: true });
  await stripe.webhookEndpoints.list();
  await stripe.webhookEndpoints.del(endpoint.id);

  // Billing: catalog, customers, balances, payment methods, subscriptions, invoices, credit notes, clocks.
  const product = await stripe.products.create({ name: 'Plan', description: 'schema' });
  await stripe.products.retrieve(product.id);
  await stripe.products.update(product.id, { metadata: { tier: 'gold' } });
  await stripe.products.list({ limit: 3 });
  const price = await stripe.prices.create({ product: product.id, unit_amount: 1_500, currency: 'usd', recurring: { interval: 'month' }, lookup_key: 'schema-monthly' });
  await stripe.prices.create({ product_data: { name: 'One-off' }, unit_amount: 700, currency: 'usd' });
  await stripe.prices.retrieve(price.id);
  await stripe.prices.update(price.id, { nickname: 'monthly' });
  await stripe.prices.list({ lookup_keys: ['schema-monthly'] });
  const customer = await stripe.customers.create({ name: 'Dana', email: 'dana@example.com', payment_method: 'pm_card_visa', invoice_settings: { default_payment_method: 'pm_card_visa' } });
  await stripe.customers.retrieve(customer.id);
  await stripe.customers.update(customer.id, { description: 'schema' });
  await stripe.customers.list({ email: 'dana@example.com' });
  const credit = await stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'usd', description: 'goodwill' });
  await stripe.customers.retrieveBalanceTransaction(customer.id, credit.id);
  await stripe.customers.updateBalanceTransaction(customer.id, credit.id, { metadata: { case: '1' } });
  await stripe.customers.listBalanceTransactions(customer.id);
  // A balance in another currency than the customer's: its `invoice_credit_balance` entry, sent only when expanded.
  await stripe.customers.createBalanceTransaction(customer.id, { amount: -300, currency: 'eur' });
  await stripe.customers.retrieve(customer.id, { expand: ['invoice_credit_balance'] });
  const attached = await stripe.paymentMethods.attach('pm_card_mastercard', { customer: customer.id });
  await stripe.paymentMethods.list({ customer: customer.id, type: 'card' });
  await stripe.customers.listPaymentMethods(customer.id);
  await stripe.paymentMethods.detach(attached.id);
  const subscription = await stripe.subscriptions.create({ customer: customer.id, items: [{ price: price.id }] });
  await stripe.subscriptions.retrieve(subscription.id);
  await stripe.subscriptions.retrieve(subscription.id, { expand: ['latest_invoice', 'customer'] });
  await stripe.subscriptions.update(subscription.id, { metadata: { foo: 'bar' } });
  await stripe.subscriptions.list({ customer: customer.id });
  await stripe.subscriptionItems.list({ subscription: subscription.id });
  const subscriptionInvoice = String((await stripe.subscriptions.retrieve(subscription.id)).latest_invoice);
  await stripe.invoices.retrieve(subscriptionInvoice);
  await stripe.invoices.listLineItems(subscriptionInvoice);
  const note = await stripe.creditNotes.create({ invoice: subscriptionInvoice, amount: 300, credit_amount: 300, reason: 'order_change' });
  await stripe.creditNotes.retrieve(note.id);
  await stripe.creditNotes.update(note.id, { memo: 'schema' });
  await stripe.creditNotes.list({ invoice: subscriptionInvoice });
  await stripe.creditNotes.listLineItems(note.id);
  await stripe.creditNotes.voidCreditNote(note.id);
  await stripe.subscriptions.cancel(subscription.id);

  const item = await stripe.invoiceItems.create({ customer: customer.id, amount: 2_000, currency: 'usd', description: 'one-off' });
  await stripe.invoiceItems.create({ customer: customer.id, pricing: { price: price.id }, quantity: 2 });
  await stripe.invoiceItems.retrieve(item.id);
  await stripe.invoiceItems.list({ customer: customer.id, pending: true });
  const draft = await stripe.invoices.create({ customer: customer.id, description: 'one-off', pending_invoice_items_behavior: 'include' });
  await stripe.invoices.update(draft.id, { metadata: { order: '2' } });
  await stripe.invoices.finalizeInvoice(draft.id);
  await stripe.creditNotes.create({ invoice: draft.id, lines: [{ type: 'custom_line_item', unit_amount: 1_000, quantity: 1, description: 'credit' }] });
  await stripe.invoices.pay(draft.id);
  const voided = await stripe.invoices.create({ customer: customer.id });
  await stripe.invoiceItems.create({ customer: customer.id, amount: 900, currency: 'usd', invoice: voided.id });
  await stripe.invoices.finalizeInvoice(voided.id);
  await stripe.invoices.voidInvoice(voided.id);
  await stripe.invoices.list({ customer: customer.id, expand: ['data.customer'] });

  const clock = await stripe.testHelpers.testClocks.create({ frozen_time: Math.floor(Date.now() / 1000), name: 'schema' });
  await stripe.testHelpers.testClocks.retrieve(clock.id);
  await stripe.testHelpers.testClocks.list();
  await stripe.testHelpers.testClocks.advance(clock.id, { frozen_time: clock.frozen_time + 3_600 });
  await new Promise((resolve) => setTimeout(resolve, 300));
  await stripe.testHelpers.testClocks.del(clock.id);
  const gone = await stripe.customers.create({ name: 'gone' });
  await stripe.customers.del(gone.id);
  await stripe.customers.retrieve(gone.id);

  await stripe.events.list({ limit: 100 });
  await stripe.events.list({ limit: 100, starting_after: (await stripe.events.list({ limit: 1 })).data[0]?.id ?? '' });
  await stripe.events.retrieve((await stripe.events.list({ limit: 1 })).data[0]?.id ?? '');
  await stripe.rawRequest('POST', '/v1/stripecli/sessions', { device_name: 'schema', websocket_features: ['webhooks'] });
  await expectStripeError(stripe.refunds.retrieve('re_missing'));
}

describe('Stripe’s shape', () => {
  it('answers every endpoint it serves, through the SDK, with objects that validate against Stripe’s OpenAPI document and the SDK’s types', async () => {
    await drive();
    const served = sandbox.apiRoutes().map((r) => `${r.method} ${r.path}`);
    const reached = new Set(records.filter((r) => r.route !== null && r.status === 200).map((r) => `${r.method} ${r.route ?? ''}`));
    expect(served.filter((route) => !reached.has(route))).toEqual([]);
    const faults = records.filter((r) => !undocumented.has(`${r.method} ${r.route ?? ''}`)).flatMap(recordFaults);
    expect([...new Set(faults)]).toEqual([]);
  }, 120_000);

  it('answers an endpoint it does not model with Stripe’s 404 Unrecognized request URL, never as an id', async () => {
    for (const path of ['/v1/refunds/search', '/v1/invoices/create_preview', '/v1/customers/search', '/v1/credit_notes/preview', '/v1/invoices/upcoming']) {
      const call = path.endsWith('create_preview') ? stripe.rawRequest('POST', path, {}) : stripe.rawRequest('GET', path.endsWith('search') ? `${path}?query=${encodeURIComponent("status:'succeeded'")}` : path);
      const error = await expectStripeError(call);
      expect(error.statusCode, path).toBe(404);
      expect(error.message).toMatch(/^Unrecognized request URL \((GET|POST): /);
    }
  });
});
