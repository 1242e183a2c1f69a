// Rule: every move of a customer's balance is announced as `customer.updated` whose `previous_attributes` name what
// moved, in any currency: the entry of `invoice_credit_balance` for the transaction's currency as it was (null for a
// currency the customer had no balance in, as a field that did not exist before reads), `balance` only when it moved
// (the transaction is in `customer.currency`), `currency` when the transaction set it. Stripe keeps one balance per
// currency (OpenAPI 2023-08-16: a balance transaction's `currency` "specifies the invoice_credit_balance that this
// transaction will apply to"), so a credit in another currency than the customer's moves `invoice_credit_balance` and
// not `balance`. `invoice_credit_balance` is includable (sent only when expanded): it stays out of `data.object`, and
// only its previous value is named. The sandbox used to send such an event with no `previous_attributes` at all, an
// update that said nothing of what changed. No Stripe document or recorded event shows this payload: the shape is the
// sandbox's own reading of "the names of the updated attributes and their values prior to the event".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness } from './helpers.js';
import type Stripe from 'stripe';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

/** The customer.updated events of `customer`, oldest first. */
async function updatesOf(customer: string): Promise<Stripe.Event[]> {
  const events = (await h.stripe.events.list({ type: 'customer.updated', limit: 100 })).data;
  return events.filter((event) => (event.data.object as { id?: string }).id === customer).reverse();
}

describe('sandbox: customer.updated for a balance move names what moved', () => {
  it('a credit in another currency than the customer\'s: that currency\'s entry of invoice_credit_balance, not balance', async () => {
    const customer = await h.stripe.customers.create({ name: 'usd customer' });
    await h.stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'usd' });
    await h.stripe.customers.createBalanceTransaction(customer.id, { amount: -1_000, currency: 'eur' });
    await h.stripe.customers.createBalanceTransaction(customer.id, { amount: 400, currency: 'eur' });

    const [first, euros, debit, ...rest] = await updatesOf(customer.id);
    expect(rest).toEqual([]);
    // The first sets the customer's currency and moves its balance.
    expect(first?.data.previous_attributes).toEqual({ balance: 0, currency: null, invoice_credit_balance: { usd: null } });
    // eur: no balance in it before, then the 1000 credit (positive in invoice_credit_balance: a credit).
    expect(euros?.data.previous_attributes).toEqual({ invoice_credit_balance: { eur: null } });
    expect(debit?.data.previous_attributes).toEqual({ invoice_credit_balance: { eur: 1_000 } });
    for (const event of [euros, debit]) {
      expect(event?.data.object).toMatchObject({ id: customer.id, currency: 'usd', balance: -500 });
      expect(event?.data.object).not.toHaveProperty('invoice_credit_balance');
    }
    const now = (await h.stripe.customers.retrieve(customer.id, { expand: ['invoice_credit_balance'] })) as Stripe.Customer;
    expect(now.invoice_credit_balance).toEqual({ usd: 500, eur: 600 });
  });

  it('an invoice in another currency that uses that currency\'s credit names its entry as it was', async () => {
    const customer = await h.stripe.customers.create({ name: 'usd customer, eur invoice' });
    await h.stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'usd' });
    await h.stripe.customers.createBalanceTransaction(customer.id, { amount: -1_000, currency: 'eur' });
    await h.stripe.invoiceItems.create({ customer: customer.id, amount: 3_000, currency: 'eur' });
    const draft = await h.stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: 'include' });
    const before = (await updatesOf(customer.id)).length;
    await h.stripe.invoices.finalizeInvoice(draft.id);

    const updates = (await updatesOf(customer.id)).slice(before);
    expect(updates.map((event) => event.data.previous_attributes)).toEqual([{ invoice_credit_balance: { eur: 1_000 } }]);
  });

  it('a move in the customer\'s currency names balance and its entry, and an update of another field names neither', async () => {
    const customer = await h.stripe.customers.create({ name: 'usd customer' });
    await h.stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'usd' });
    const before = (await updatesOf(customer.id)).length;
    await h.stripe.customers.createBalanceTransaction(customer.id, { amount: -250, currency: 'usd' });
    await h.stripe.customers.update(customer.id, { email: 'renamed@example.com' });

    const [moved, renamed, ...rest] = (await updatesOf(customer.id)).slice(before);
    expect(rest).toEqual([]);
    expect(moved?.data.previous_attributes).toEqual({ balance: -500, invoice_credit_balance: { usd: 500 } });
    expect(renamed?.data.previous_attributes).toEqual({ email: null });
  });
});
