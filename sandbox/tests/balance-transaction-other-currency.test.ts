// Rule: Stripe keeps a customer's credit balance per currency (`invoice_credit_balance`), and the `currency` of
// `POST /v1/customers/{customer}/balance_transactions` "specifies the invoice_credit_balance that this transaction will
// apply to" (OpenAPI 2023-08-16, request body of that operation; customer.invoice_credit_balance: "The current
// multi-currency balances ... A balance in a particular currency is only applied to ... an invoice in that currency";
// stripe-facts §8.1: "`invoice_credit_balance` is the per-currency map"). A credit in another currency than
// `customer.currency` therefore lands at Stripe (in that currency's balance); it is not a 400. The sandbox used to
// refuse it, so a credit the gate sends after the customer's currency changed read as a definite no
// (REFUSED:target_error, no money) in tests, where real Stripe would commit a credit that never reduces the customer's
// invoices. `balance` stays the one in `customer.currency`, and `invoice_credit_balance` is sent only when expanded
// (absent from Stripe's customer fixture, stripe/openapi fixtures3.json).
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../index.js';
import type { Sandbox } from '../index.js';

let sandbox: Sandbox;
let stripe: Stripe;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, delays: 'fast' });
  stripe = new Stripe('sk_test_credit_currency', { host: sandbox.host, port: sandbox.port, protocol: 'http', maxNetworkRetries: 0 });
});
afterAll(() => sandbox.close());

const retrieve = async (id: string, expand: string[] = []): Promise<Stripe.Customer> => (await stripe.customers.retrieve(id, { expand })) as Stripe.Customer;

describe('sandbox: a customer balance per currency', () => {
  it('accepts a balance credit in a currency other than the customer\'s: Stripe stores it in that currency\'s balance', async () => {
    const customer = await stripe.customers.create({ name: 'usd customer' });
    await stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'usd' });
    expect((await retrieve(customer.id)).currency).toBe('usd');

    // What the credit target sends when INTERLOCK_CREDIT_CURRENCY differs from what the customer became billed in
    // between its premise read and its send.
    const outcome = await stripe.customers
      .createBalanceTransaction(customer.id, { amount: -1_000, currency: 'eur', metadata: { interlock_effect_id: 'e'.repeat(64) } })
      .then((txn) => ({ landed: true as const, currency: txn.currency, amount: txn.amount }))
      .catch((error: Stripe.errors.StripeError) => ({ landed: false as const, status: error.statusCode, message: error.message }));
    expect(outcome).toEqual({ landed: true, currency: 'eur', amount: -1_000 });
  });

  it('leaves `balance` and `currency` (usd) as they were, and shows the eur credit in invoice_credit_balance only when expanded', async () => {
    const customer = await stripe.customers.create({ name: 'usd customer' });
    await stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'usd' });
    const since = (await stripe.events.list({ limit: 1 })).data[0]?.id ?? '';
    const euros = await stripe.customers.createBalanceTransaction(customer.id, { amount: -1_000, currency: 'eur' });
    // ending_balance is the balance the transaction moved: eur's.
    expect(euros).toMatchObject({ type: 'adjustment', currency: 'eur', amount: -1_000, ending_balance: -1_000 });

    const plain = await retrieve(customer.id);
    expect(plain).toMatchObject({ currency: 'usd', balance: -500 });
    expect(plain).not.toHaveProperty('invoice_credit_balance');
    expect((await retrieve(customer.id, ['invoice_credit_balance'])).invoice_credit_balance).toEqual({ usd: 500, eur: 1_000 });
    // Expanded on a list, as any includable field.
    const listed = await stripe.customers.list({ limit: 1, expand: ['data.invoice_credit_balance'] });
    expect(listed.data[0]).toMatchObject({ id: customer.id, invoice_credit_balance: { usd: 500, eur: 1_000 } });

    // Announced as customer.updated like every balance move; `balance` did not move, so it is not among the previous attributes.
    const updates = (await stripe.events.list({ type: 'customer.updated', ending_before: since })).data;
    expect(updates).toHaveLength(1);
    expect(updates[0]?.data.object).toMatchObject({ id: customer.id, balance: -500, currency: 'usd' });
    expect(updates[0]?.data.object).not.toHaveProperty('invoice_credit_balance');
    expect(updates[0]?.data.previous_attributes ?? {}).not.toHaveProperty('balance');
  });

  it('a customer without a currency takes that of its first balance transaction, and `balance` is that currency\'s', async () => {
    const customer = await stripe.customers.create({ name: 'new customer' });
    expect((await retrieve(customer.id, ['invoice_credit_balance'])).invoice_credit_balance).toEqual({});
    await stripe.customers.createBalanceTransaction(customer.id, { amount: -700, currency: 'eur' });
    await stripe.customers.createBalanceTransaction(customer.id, { amount: -300, currency: 'gbp' });
    expect(await retrieve(customer.id, ['invoice_credit_balance'])).toMatchObject({ currency: 'eur', balance: -700, invoice_credit_balance: { eur: 700, gbp: 300 } });
  });

  it('applies each currency\'s balance only to invoices in that currency, and a credit note credits the balance of its invoice\'s currency', async () => {
    const customer = await stripe.customers.create({ name: 'two currencies', payment_method: 'pm_card_visa', invoice_settings: { default_payment_method: 'pm_card_visa' } });
    await stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'usd' });
    await stripe.customers.createBalanceTransaction(customer.id, { amount: -1_000, currency: 'eur' });

    await stripe.invoiceItems.create({ customer: customer.id, amount: 3_000, currency: 'eur', description: 'eur work' });
    const draft = await stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: 'include' });
    expect(draft).toMatchObject({ currency: 'eur', starting_balance: -1_000 });
    const invoice = await stripe.invoices.finalizeInvoice(draft.id);
    expect(invoice).toMatchObject({ currency: 'eur', total: 3_000, starting_balance: -1_000, ending_balance: 0, amount_due: 2_000 });
    const [applied] = (await stripe.customers.listBalanceTransactions(customer.id, { invoice: invoice.id })).data;
    expect(applied).toMatchObject({ type: 'applied_to_invoice', currency: 'eur', amount: 1_000, ending_balance: 0 });
    expect(await retrieve(customer.id, ['invoice_credit_balance'])).toMatchObject({ currency: 'usd', balance: -500, invoice_credit_balance: { usd: 500, eur: 0 } });

    const paid = await stripe.invoices.pay(invoice.id);
    expect(paid.status).toBe('paid');
    const note = await stripe.creditNotes.create({ invoice: invoice.id, amount: 700, credit_amount: 700 });
    const credited = await stripe.customers.retrieveBalanceTransaction(customer.id, String(note.customer_balance_transaction));
    expect(credited).toMatchObject({ type: 'credit_note', currency: 'eur', amount: -700, ending_balance: -700 });
    expect(await retrieve(customer.id, ['invoice_credit_balance'])).toMatchObject({ balance: -500, invoice_credit_balance: { usd: 500, eur: 700 } });
    await stripe.creditNotes.voidCreditNote(note.id);
    expect(await retrieve(customer.id, ['invoice_credit_balance'])).toMatchObject({ balance: -500, invoice_credit_balance: { usd: 500, eur: 0 } });

    // A usd invoice takes the usd balance, and only it.
    await stripe.invoiceItems.create({ customer: customer.id, amount: 200, currency: 'usd', description: 'usd work' });
    const dollars = await stripe.invoices.finalizeInvoice((await stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: 'include' })).id);
    expect(dollars).toMatchObject({ currency: 'usd', starting_balance: -500, ending_balance: -300, amount_due: 0, status: 'paid' });
    expect(await retrieve(customer.id, ['invoice_credit_balance'])).toMatchObject({ balance: -300, invoice_credit_balance: { usd: 300, eur: 0 } });
  });
});
