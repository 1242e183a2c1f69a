// Rule: one API update is one `*.updated` event, sent only when a property changed ("Occurs whenever any property of a
// customer changes"; stripe-facts §6.1: `previous_attributes` holds the prior values of the changed fields). Setting
// `balance` in `POST /v1/customers/:id` records its adjustment (a customer balance transaction) and is announced by that
// update's single `customer.updated`, whose `data.object` carries the new balance and `previous_attributes.balance` the
// old one; an update that changes nothing sends none, and neither does a refund update that changes nothing
// (`refund.updated`, `charge.refund.updated`). A balance transaction POST still sends its own `customer.updated`
// (stripe-facts §6.2). The sandbox used to send `customer.updated` before applying `balance` (stale balance, no
// previous_attributes), a second one for the balance move, and an event for every no-op update.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness } from './helpers.js';
import type Stripe from 'stripe';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

/** Events of `type` about object `id`, oldest first. */
async function eventsAbout(type: string, id: string): Promise<Stripe.Event[]> {
  const events = (await h.stripe.events.list({ type, limit: 100 })).data;
  return events.filter((event) => (event.data.object as { id?: string }).id === id).reverse();
}

describe('sandbox: an update sends one *.updated event, and only when something changed', () => {
  it('customers.update with balance and name is one customer.updated naming both, with the adjustment recorded', async () => {
    const customer = await h.stripe.customers.create({ name: 'before' });
    await h.stripe.customers.update(customer.id, { name: 'after', balance: -500 });
    const updates = await eventsAbout('customer.updated', customer.id);
    expect(updates.map((e) => ({ balance: (e.data.object as Stripe.Customer).balance, name: (e.data.object as Stripe.Customer).name, previous: e.data.previous_attributes }))).toEqual([
      { balance: -500, name: 'after', previous: expect.objectContaining({ balance: 0, name: 'before' }) },
    ]);
    const transactions = (await h.stripe.customers.listBalanceTransactions(customer.id)).data;
    expect(transactions.map((t) => ({ amount: t.amount, type: t.type, ending_balance: t.ending_balance }))).toEqual([{ amount: -500, type: 'adjustment', ending_balance: -500 }]);
  });

  it('a customer update that changes nothing (same name, same balance) sends no customer.updated', async () => {
    const customer = await h.stripe.customers.create({ name: 'same' });
    await h.stripe.customers.update(customer.id, { name: 'same', balance: 0 });
    expect(await eventsAbout('customer.updated', customer.id)).toEqual([]);
  });

  it('a balance transaction still sends customer.updated with previous_attributes.balance', async () => {
    const customer = await h.stripe.customers.create({ name: 'credited' });
    await h.stripe.customers.createBalanceTransaction(customer.id, { amount: -300, currency: 'usd' });
    const updates = await eventsAbout('customer.updated', customer.id);
    expect(updates.map((e) => e.data.previous_attributes)).toEqual([expect.objectContaining({ balance: 0 })]);
  });

  it('a refund update that changes nothing sends neither refund.updated nor charge.refund.updated; one that changes metadata sends both', async () => {
    const intent = await h.stripe.paymentIntents.create({ amount: 2_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
    const refund = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 500, metadata: { k: 'v' } });
    await h.stripe.refunds.update(refund.id, { metadata: { k: 'v' } });
    expect({ refund: await eventsAbout('refund.updated', refund.id), charge: await eventsAbout('charge.refund.updated', refund.id) }).toEqual({ refund: [], charge: [] });
    await h.stripe.refunds.update(refund.id, { metadata: { k: 'w' } });
    const previous = async (type: string) => (await eventsAbout(type, refund.id)).map((e) => e.data.previous_attributes);
    expect({ refund: await previous('refund.updated'), charge: await previous('charge.refund.updated') }).toEqual({ refund: [{ metadata: { k: 'v' } }], charge: [{ metadata: { k: 'v' } }] });
  });
});
