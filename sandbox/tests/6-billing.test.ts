// Issue 3, point 6: billing at the depth of the billing_credit scenario (scenarios.md §3.3, §3.7; the billing seed
// 004_ebe33baad4611d52): one test per observed fact, named after it, plus the refusals the references list.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, expectStripeError, startHarness } from './helpers.js';
import type { Harness } from './helpers.js';

let h: Harness;
let plan30: Stripe.Price;
let plan20: Stripe.Price;
beforeAll(async () => {
  h = await startHarness();
  plan30 = await ensurePrice(3_000);
  plan20 = await ensurePrice(2_000);
});
afterAll(() => h.sandbox.close());

const START = 1_790_000_000; // 2026-09-21, a fixed frozen time so periods are deterministic

/** `ensure_prices`: find by lookup key, else create with product_data (scenarios.md §3.3). */
async function ensurePrice(cents: number): Promise<Stripe.Price> {
  const lookupKey = `interlock-sandbox-billing-credit-${cents}`;
  const found = await h.stripe.prices.list({ lookup_keys: [lookupKey], limit: 1 });
  if (found.data[0] !== undefined) return found.data[0];
  return h.stripe.prices.create({ unit_amount: cents, currency: 'usd', recurring: { interval: 'month' }, lookup_key: lookupKey, product_data: { name: `interlock-sandbox plan $${cents / 100}/mo` } });
}

interface Case {
  clock: Stripe.TestHelpers.TestClock;
  customer: Stripe.Customer;
  subscription: Stripe.Subscription;
}

/** `open_case`: a clock, a customer on pm_card_visa, a $30 subscription. */
async function openCase(): Promise<Case> {
  const clock = await h.stripe.testHelpers.testClocks.create({ frozen_time: START, name: 'interlock-sandbox billing test' });
  const customer = await h.stripe.customers.create({
    test_clock: clock.id,
    name: 'Billing test',
    payment_method: 'pm_card_visa',
    invoice_settings: { default_payment_method: 'pm_card_visa' },
    metadata: { sandbox: 'interlock-sandbox' },
  });
  const subscription = await h.stripe.subscriptions.create({ customer: customer.id, items: [{ price: plan30.id }] });
  return { clock, customer, subscription };
}

const credit = (c: Case, key?: string) =>
  h.stripe.customers.createBalanceTransaction(
    c.customer.id,
    { amount: -1_000, currency: 'usd', description: 'Goodwill credit for incident INC-abc123', metadata: { case_id: 'case-0123456789' } },
    key === undefined ? {} : { idempotencyKey: key },
  );

/** `advance_through_renewal`: period end + 3 h, poll until ready, the first subscription_cycle invoice. */
async function advanceThroughRenewal(c: Case): Promise<Stripe.Invoice> {
  const subscription = await h.stripe.subscriptions.retrieve(c.subscription.id);
  const periodEnd = subscription.items.data[0]!.current_period_end;
  const advancing = await h.stripe.testHelpers.testClocks.advance(c.clock.id, { frozen_time: periodEnd + 3 * 3600 });
  expect(advancing.status).toBe('advancing');
  await eventually(() => h.stripe.testHelpers.testClocks.retrieve(c.clock.id), (clock) => clock.status === 'ready');
  const invoices = await h.stripe.invoices.list({ customer: c.customer.id, limit: 10 });
  const renewal = invoices.data.find((i) => i.billing_reason === 'subscription_cycle');
  if (renewal === undefined) throw new Error('no renewal invoice');
  return renewal;
}

const downgrade = async (c: Case): Promise<void> => {
  const subscription = await h.stripe.subscriptions.retrieve(c.subscription.id);
  await h.stripe.subscriptions.update(c.subscription.id, { items: [{ id: subscription.items.data[0]!.id, price: plan20.id }], proration_behavior: 'create_prorations' });
};

const balanceOf = async (c: Case): Promise<number> => (await h.stripe.customers.retrieve(c.customer.id) as Stripe.Customer).balance;

const slaCreditNote = (invoice: Stripe.Invoice, incident: string) =>
  h.stripe.creditNotes.create({ invoice: invoice.id, amount: 1_000, credit_amount: 1_000, memo: `SLA credit for ${incident}`, metadata: { incident, source: 'billing-sla-automation' } });

describe('6. billing: seed facts (scenarios.md §3.7)', () => {
  it('ensure_prices: a price found by lookup_keys[] is reused; product_data names the product; recurring monthly', async () => {
    expect((await ensurePrice(3_000)).id).toBe(plan30.id);
    expect(plan30).toMatchObject({ unit_amount: 3_000, currency: 'usd', type: 'recurring', lookup_key: 'interlock-sandbox-billing-credit-3000' });
    expect(plan30.recurring).toMatchObject({ interval: 'month', interval_count: 1 });
    expect((await h.stripe.products.retrieve(plan30.product as string)).name).toBe('interlock-sandbox plan $30/mo');
  });

  it('the subscription_create invoice is paid, total 3000; the subscription is active with its period on the item', async () => {
    const c = await openCase();
    expect(c.subscription.status).toBe('active');
    const item = c.subscription.items.data[0]!;
    expect(item.current_period_start).toBe(START);
    expect(item.current_period_end).toBe(START + 30 * 86_400); // 21 Sep → 21 Oct
    const [invoice] = (await h.stripe.invoices.list({ customer: c.customer.id })).data;
    expect(invoice).toMatchObject({ billing_reason: 'subscription_create', status: 'paid', total: 3_000, amount_due: 3_000, amount_paid: 3_000, starting_balance: 0 });
    expect(invoice!.lines.data[0]).toMatchObject({ amount: 3_000, description: '1 × interlock-sandbox plan $30/mo (at $30.00 / month)' });
  });

  it('adjustment, amount -1000: the manual credit; customer balance -1000; customer.updated carries previous_attributes.balance', async () => {
    const c = await openCase();
    const txn = await credit(c, `goodwill-credit-${c.customer.id}`);
    expect(txn).toMatchObject({ object: 'customer_balance_transaction', type: 'adjustment', amount: -1_000, currency: 'usd', ending_balance: -1_000, customer: c.customer.id, metadata: { case_id: 'case-0123456789' } });
    expect(txn.id).toMatch(/^cbtxn_/);
    expect(await balanceOf(c)).toBe(-1_000);
    const [event] = (await h.stripe.events.list({ type: 'customer.updated', limit: 1 })).data;
    expect((event!.data.object as Stripe.Customer).id).toBe(c.customer.id);
    expect(event!.data.previous_attributes).toMatchObject({ balance: 0 });
    expect(event!.request).toEqual({ id: expect.stringMatching(/^req_/) as string, idempotency_key: `goodwill-credit-${c.customer.id}` });
    expect((await h.stripe.events.list({ type: 'customer_balance_transaction.*' })).data).toEqual([]);
  });

  it('idempotent replay on balance transactions works like refunds: the original object, Idempotent-Replayed: true, one credit', async () => {
    const c = await openCase();
    const key = `goodwill-credit-${c.customer.id}`;
    const first = await credit(c, key);
    const again = await credit(c, key);
    expect(again.id).toBe(first.id);
    expect(again.lastResponse.headers['idempotent-replayed']).toBe('true');
    expect((await h.stripe.customers.listBalanceTransactions(c.customer.id)).data).toHaveLength(1);
    expect(await balanceOf(c)).toBe(-1_000);
  });

  it('plain renewal with the credit in place: subscription_cycle, paid, total 3000, starting_balance -1000, amount_due 2000; balance back to 0', async () => {
    const c = await openCase();
    await credit(c);
    const renewal = await advanceThroughRenewal(c);
    expect(renewal).toMatchObject({ billing_reason: 'subscription_cycle', status: 'paid', total: 3_000, starting_balance: -1_000, ending_balance: 0, amount_due: 2_000, amount_paid: 2_000 });
    expect(await balanceOf(c)).toBe(0);
  });

  it('applied_to_invoice, +1000: created when a renewal consumes a negative balance', async () => {
    const c = await openCase();
    await credit(c);
    const renewal = await advanceThroughRenewal(c);
    const [applied, adjustment] = (await h.stripe.customers.listBalanceTransactions(c.customer.id)).data;
    expect(applied).toMatchObject({ type: 'applied_to_invoice', amount: 1_000, invoice: renewal.id, ending_balance: 0 });
    expect(adjustment).toMatchObject({ type: 'adjustment', amount: -1_000 });
  });

  it('plain renewal without a credit yet: total 3000, starting_balance 0, amount_due 3000; a credit posted after leaves the balance at -1000', async () => {
    const c = await openCase();
    const renewal = await advanceThroughRenewal(c);
    expect(renewal).toMatchObject({ status: 'paid', total: 3_000, starting_balance: 0, amount_due: 3_000 });
    await credit(c);
    expect(await balanceOf(c)).toBe(-1_000);
  });

  it('proration (downgrade right after creation): renewal total 1000 — the $20 price minus the net $10 proration credit', async () => {
    const c = await openCase();
    await downgrade(c);
    const pending = (await h.stripe.invoiceItems.list({ customer: c.customer.id, pending: true })).data;
    expect(pending.map((i) => [i.amount, i.description]).sort()).toEqual([
      [-3_000, 'Unused time on interlock-sandbox plan $30/mo after 21 Sep 2026'],
      [2_000, 'Remaining time on interlock-sandbox plan $20/mo after 21 Sep 2026'],
    ]);
    expect(pending.every((i) => i.proration)).toBe(true);
    const renewal = await advanceThroughRenewal(c);
    expect(renewal).toMatchObject({ total: 1_000, starting_balance: 0, amount_due: 1_000, status: 'paid' });
    const prorations = renewal.lines.data.filter((l) => l.parent?.subscription_item_details?.proration === true);
    expect(prorations.map((l) => l.amount).sort((a, b) => a - b)).toEqual([-3_000, 2_000]);
  });

  it('proration with the credit already present: starting_balance -1000, amount_due 0', async () => {
    const c = await openCase();
    await credit(c);
    await downgrade(c);
    const renewal = await advanceThroughRenewal(c);
    expect(renewal).toMatchObject({ total: 1_000, starting_balance: -1_000, amount_due: 0, amount_paid: 0, status: 'paid', ending_balance: 0 });
    expect(await balanceOf(c)).toBe(0);
  });

  it('credit_note, -1000: a credit note with credit_amount on an already-paid invoice; balance -1000; the note is issued', async () => {
    const c = await openCase();
    const renewal = await advanceThroughRenewal(c);
    const note = await slaCreditNote(renewal, 'INC-abc123');
    expect(note).toMatchObject({ object: 'credit_note', status: 'issued', amount: 1_000, invoice: renewal.id, memo: 'SLA credit for INC-abc123', metadata: { incident: 'INC-abc123', source: 'billing-sla-automation' }, type: 'post_payment', post_payment_amount: 1_000 });
    const [txn] = (await h.stripe.customers.listBalanceTransactions(c.customer.id)).data;
    expect(txn).toMatchObject({ type: 'credit_note', amount: -1_000, credit_note: note.id, invoice: renewal.id });
    expect(note.customer_balance_transaction).toBe(txn!.id);
    expect(await balanceOf(c)).toBe(-1_000);
    expect((await h.stripe.invoices.retrieve(renewal.id)).post_payment_credit_notes_amount).toBe(1_000);
    const listed = await h.stripe.creditNotes.list({ customer: c.customer.id, limit: 100 });
    expect(listed.data.map((n) => n.id)).toEqual([note.id]);
    expect((await h.stripe.creditNotes.list({ invoice: renewal.id })).data.map((n) => n.id)).toEqual([note.id]);
    const [created] = (await h.stripe.events.list({ type: 'credit_note.created', limit: 1 })).data;
    expect((created!.data.object as Stripe.CreditNote).id).toBe(note.id);
  });

  it('objects created for a customer on a test clock carry the clock’s frozen time; credits after the advance are ~30 days ahead', async () => {
    const c = await openCase();
    expect(c.customer.created).toBe(START);
    expect(c.subscription.created).toBe(START);
    const before = await credit(c);
    expect(before.created).toBe(START);
    const renewal = await advanceThroughRenewal(c);
    expect(renewal.created).toBe(START + 30 * 86_400);
    const after = await credit(c);
    expect(after.created).toBe(START + 30 * 86_400 + 3 * 3600);
  });

  it('lists return the newest objects first', async () => {
    const c = await openCase();
    await advanceThroughRenewal(c);
    const invoices = (await h.stripe.invoices.list({ customer: c.customer.id })).data;
    expect(invoices.map((i) => i.billing_reason)).toEqual(['subscription_cycle', 'subscription_create']);
    const a = await credit(c);
    const b = await credit(c);
    expect((await h.stripe.customers.listBalanceTransactions(c.customer.id, { limit: 2 })).data.map((t) => t.id)).toEqual([b.id, a.id]);
  });

  it('incident premise: only credit notes and adjustments tagged with this incident count (billing_credit vs unrelated_credit rows)', async () => {
    const same = await openCase();
    await slaCreditNote(await advanceThroughRenewal(same), 'INC-same01');
    const other = await openCase();
    await slaCreditNote(await advanceThroughRenewal(other), 'INC-other1');
    const compensation = async (c: Case, incident: string): Promise<number> => {
      const notes = (await h.stripe.creditNotes.list({ customer: c.customer.id, limit: 100 })).data;
      return notes.filter((n) => n.status === 'issued' && n.metadata?.['incident'] === incident).reduce((sum, n) => sum + n.amount, 0);
    };
    expect(await compensation(same, 'INC-same01')).toBe(1_000);
    expect(await compensation(other, 'INC-same01')).toBe(0);
    expect(await balanceOf(same)).toBe(-1_000);
    expect(await balanceOf(other)).toBe(-1_000);
  });
});

describe('6. billing: objects, events and refusals', () => {
  it('test clock: advancing then ready, with test_helpers.test_clock.advancing/ready events; renewal events are automatic and fall between', async () => {
    const c = await openCase();
    const advanceCall = h.stripe.testHelpers.testClocks.advance(c.clock.id, { frozen_time: START + 31 * 86_400 });
    const advancing = await advanceCall;
    expect(advancing).toMatchObject({ status: 'advancing', status_details: { advancing: { target_frozen_time: START + 31 * 86_400 } } });
    const ready = await eventually(() => h.stripe.testHelpers.testClocks.retrieve(c.clock.id), (clock) => clock.status === 'ready');
    expect(ready.frozen_time).toBe(START + 31 * 86_400);
    const types = (await h.stripe.events.list({ limit: 30 })).data.map((e) => e.type).reverse();
    const from = types.lastIndexOf('test_helpers.test_clock.advancing');
    expect(types.slice(from)).toEqual([
      'test_helpers.test_clock.advancing',
      'invoice.created',
      'customer.subscription.updated',
      'invoice.finalized',
      'payment_intent.created',
      'charge.succeeded',
      'payment_intent.succeeded',
      'invoice.paid',
      'invoice.payment_succeeded',
      'test_helpers.test_clock.ready',
    ]);
    const [paid] = (await h.stripe.events.list({ type: 'invoice.paid', limit: 1 })).data;
    expect(paid!.request).toEqual({ id: null, idempotency_key: null });
    expect(paid!.data.previous_attributes).toMatchObject({ status: 'open' });
  });

  it('a test clock refuses to go backwards and to advance while advancing', async () => {
    const clock = await h.stripe.testHelpers.testClocks.create({ frozen_time: START });
    expect((await expectStripeError(h.stripe.testHelpers.testClocks.advance(clock.id, { frozen_time: START - 1 }))).param).toBe('frozen_time');
    await h.stripe.testHelpers.testClocks.advance(clock.id, { frozen_time: START + 60 });
    const busy = await expectStripeError(h.stripe.testHelpers.testClocks.advance(clock.id, { frozen_time: START + 120 }));
    expect(busy.message).toMatch(/currently advancing/);
  });

  it('subscription create: customer.subscription.created, then updated to active with the paid first invoice', async () => {
    const c = await openCase();
    const [updated] = (await h.stripe.events.list({ type: 'customer.subscription.updated', limit: 1 })).data;
    expect((updated!.data.object as Stripe.Subscription).id).toBe(c.subscription.id);
    expect(updated!.data.previous_attributes).toMatchObject({ status: 'incomplete', latest_invoice: null });
    expect(c.subscription.latest_invoice).toMatch(/^in_/);
  });

  it('subscription update: items[0][price] swaps the price and emits customer.subscription.updated with the previous items', async () => {
    const c = await openCase();
    await downgrade(c);
    const sub = await h.stripe.subscriptions.retrieve(c.subscription.id);
    expect(sub.items.data[0]!.price.id).toBe(plan20.id);
    const [event] = (await h.stripe.events.list({ type: 'customer.subscription.updated', limit: 1 })).data;
    expect(JSON.stringify(event!.data.previous_attributes)).toContain(plan30.id);
  });

  it('always_invoice invoices the proration now; a negative total becomes customer credit', async () => {
    const c = await openCase();
    const sub = await h.stripe.subscriptions.retrieve(c.subscription.id);
    const updated = await h.stripe.subscriptions.update(c.subscription.id, { items: [{ id: sub.items.data[0]!.id, price: plan20.id }], proration_behavior: 'always_invoice' });
    const invoice = await h.stripe.invoices.retrieve(updated.latest_invoice as string);
    expect(invoice).toMatchObject({ billing_reason: 'subscription_update', total: -1_000, amount_due: 0, status: 'paid', ending_balance: -1_000 });
    expect(await balanceOf(c)).toBe(-1_000);
  });

  it('proration_behavior none changes the price without proration items', async () => {
    const c = await openCase();
    const sub = await h.stripe.subscriptions.retrieve(c.subscription.id);
    await h.stripe.subscriptions.update(c.subscription.id, { items: [{ id: sub.items.data[0]!.id, price: plan20.id }], proration_behavior: 'none' });
    expect((await h.stripe.invoiceItems.list({ customer: c.customer.id })).data).toEqual([]);
    expect((await advanceThroughRenewal(c)).total).toBe(2_000);
  });

  it('balance transactions: retrieve, update metadata, list by customer; positive amounts are debits added to the next invoice', async () => {
    const c = await openCase();
    const debit = await h.stripe.customers.createBalanceTransaction(c.customer.id, { amount: 500, currency: 'usd' });
    expect((await h.stripe.customers.retrieveBalanceTransaction(c.customer.id, debit.id)).amount).toBe(500);
    const updated = await h.stripe.customers.updateBalanceTransaction(c.customer.id, debit.id, { metadata: { note: 'late fee' }, description: 'Late fee' });
    expect(updated).toMatchObject({ metadata: { note: 'late fee' }, description: 'Late fee', amount: 500 });
    const renewal = await advanceThroughRenewal(c);
    expect(renewal).toMatchObject({ total: 3_000, starting_balance: 500, amount_due: 3_500, ending_balance: 0 });
  });

  it('credit notes: by lines, with refund_amount, updated and voided (the balance credit is taken back)', async () => {
    const c = await openCase();
    const renewal = await advanceThroughRenewal(c);
    const line = renewal.lines.data[0]!;
    const byLine = await h.stripe.creditNotes.create({ invoice: renewal.id, lines: [{ type: 'invoice_line_item', invoice_line_item: line.id, amount: 500 }], refund_amount: 500 });
    expect(byLine).toMatchObject({ amount: 500, refunds: [{ amount_refunded: 500, type: 'refund' }] });
    expect((await h.stripe.creditNotes.listLineItems(byLine.id)).data[0]).toMatchObject({ type: 'invoice_line_item', invoice_line_item: line.id, amount: 500 });
    const toBalance = await slaCreditNote(renewal, 'INC-void01');
    expect((await h.stripe.creditNotes.update(toBalance.id, { metadata: { reviewed: 'yes' } })).metadata).toMatchObject({ incident: 'INC-void01', reviewed: 'yes' });
    const voided = await h.stripe.creditNotes.voidCreditNote(toBalance.id);
    expect(voided.status).toBe('void');
    expect(await balanceOf(c)).toBe(0);
  });

  it('credit note refusals: more than the invoice can still credit; allocations that do not add up; a missing invoice', async () => {
    const c = await openCase();
    const renewal = await advanceThroughRenewal(c);
    const tooMuch = await expectStripeError(h.stripe.creditNotes.create({ invoice: renewal.id, amount: 3_001, credit_amount: 3_001 }));
    expect(tooMuch).toMatchObject({ statusCode: 400, param: 'amount' });
    const unallocated = await expectStripeError(h.stripe.creditNotes.create({ invoice: renewal.id, amount: 1_000 }));
    expect(unallocated.message).toMatch(/must equal the credit note's post-payment amount/);
    const missing = await expectStripeError(h.stripe.creditNotes.create({ invoice: 'in_nope', amount: 1_000, credit_amount: 1_000 }));
    expect(missing).toMatchObject({ statusCode: 404, code: 'resource_missing', message: "No such invoice: 'in_nope'" });
  });

  it('a deleted customer retrieves as the deleted_customer stub {id, object: customer, deleted: true}; updating it or its balance is still 404 No such customer', async () => {
    const customer = await h.stripe.customers.create({ name: 'leaving' });
    expect(await h.stripe.customers.del(customer.id)).toEqual(expect.objectContaining({ id: customer.id, object: 'customer', deleted: true }));
    const gone = await h.stripe.customers.retrieve(customer.id);
    expect(gone.lastResponse.statusCode).toBe(200);
    expect(gone).toEqual({ id: customer.id, object: 'customer', deleted: true });
    const update = await expectStripeError(h.stripe.customers.update(customer.id, { name: 'back' }));
    expect(update).toMatchObject({ statusCode: 404, code: 'resource_missing', message: `No such customer: '${customer.id}'` });
    const balance = await expectStripeError(h.stripe.customers.createBalanceTransaction(customer.id, { amount: -100, currency: 'usd' }));
    expect(balance).toMatchObject({ statusCode: 404, code: 'resource_missing', message: `No such customer: '${customer.id}'` });
    expect((await expectStripeError(h.stripe.customers.retrieve('cus_never'))).statusCode).toBe(404);
  });

  it('unknown customer → 404 resource_missing "No such customer: \'cus_x\'"; other billing refusals', async () => {
    const missing = await expectStripeError(h.stripe.customers.createBalanceTransaction('cus_x', { amount: -1_000, currency: 'usd' }));
    expect(missing).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(missing).toMatchObject({ statusCode: 404, code: 'resource_missing', message: "No such customer: 'cus_x'" });
    const noCustomer = await expectStripeError(h.stripe.subscriptions.create({ customer: 'cus_x', items: [{ price: plan30.id }] }));
    expect(noCustomer).toMatchObject({ statusCode: 404, param: 'customer', message: "No such customer: 'cus_x'" });
    const bare = await h.stripe.customers.create({ name: 'no card' });
    const noMethod = await expectStripeError(h.stripe.subscriptions.create({ customer: bare.id, items: [{ price: plan30.id }] }));
    expect(noMethod.message).toMatch(/^This customer has no attached payment source or default payment method/);
    const noPrice = await expectStripeError(h.stripe.subscriptions.create({ customer: bare.id, items: [{ price: 'price_nope' }] }));
    expect(noPrice).toMatchObject({ statusCode: 404, param: 'items[0][price]', message: "No such price: 'price_nope'" });
    const noAmount = await expectStripeError(h.stripe.customers.createBalanceTransaction(bare.id, { currency: 'usd' } as Stripe.CustomerCreateBalanceTransactionParams));
    expect(noAmount).toMatchObject({ code: 'parameter_missing', param: 'amount' });
    const noClock = await expectStripeError(h.stripe.customers.create({ test_clock: 'clock_nope' }));
    expect(noClock).toMatchObject({ statusCode: 404, message: "No such test_clock: 'clock_nope'" });
  });
});
