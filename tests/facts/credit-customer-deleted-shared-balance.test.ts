// Rule (facts/apply.ts applyDeletion, shareBalance; core/final-money.ts wipedByDeletion): a deleted customer's balance
// is one sum over every credit on it, so it is given out across the customer's landed credits, newest first (invoices
// take a balance as one sum: the oldest credits are assumed used first), and the credits read lost and the
// failed_after_landed alerts claim at most what the balance held. Two $10 credits with $10 left claim $10, not $20: a
// person following the alerts pays once. Stripe deletes a customer once: a second customer.deleted under another event
// id (replayed or edited) records nothing, and the receipts and alerts stand.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

/** Two $10 credits on a new customer, then an invoice of `invoiced` cents taking part of the $20 balance. */
async function twoCreditsThenInvoice(name: string, invoiced: number): Promise<{ customer: string; older: string; newer: string }> {
  const customer = await rig.stripe.customers.create({ name });
  const older = await rig.commit({ kind: 'credit', customer: customer.id, amount: 1_000, incident: `INC-${randomBytes(3).toString('hex')}` });
  const newer = await rig.commit({ kind: 'credit', customer: customer.id, amount: 1_000, incident: `INC-${randomBytes(3).toString('hex')}` });
  await settled();
  await rig.stripe.invoiceItems.create({ customer: customer.id, amount: invoiced, currency: 'usd' });
  const draft = await rig.stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: 'include' });
  await rig.stripe.invoices.finalizeInvoice(draft.id ?? '');
  expect(await rig.stripe.customers.retrieve(customer.id)).toMatchObject({ balance: invoiced - 2_000 });
  await settled();
  return { customer: customer.id, older, newer };
}

async function lostAlerts(effectIds: readonly string[]) {
  const alerts = await rig.stores.alerts.list();
  return alerts.filter((alert) => effectIds.includes(alert.effectId) && alert.kind === 'failed_after_landed' && alert.resolvedAt === null).map((alert) => ({ effectId: alert.effectId, centsAtStake: alert.centsAtStake }));
}

describe('credits on one deleted customer', () => {
  it('claim lost at most what the balance held, the newest credit first, and a replayed deletion changes nothing', async () => {
    const { customer, older, newer } = await twoCreditsThenInvoice('Two credits, one used', 1_000);
    await rig.stripe.customers.del(customer);
    await settled();
    await rig.until(newer, (v) => v.finalMoney.status === 'not_returned', 10_000);
    await settled();
    expect((await rig.receipt(newer)).finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'customer_deleted', customerDeleted: { balance: -1_000, currency: 'usd', cents: 1_000 } });
    expect((await rig.receipt(older)).finalMoney).toMatchObject({ status: 'returned', failureReason: null });
    expect(await lostAlerts([older, newer])).toEqual([{ effectId: newer, centsAtStake: 1_000 }]);

    // The same customer deleted again under another event id, saying nothing was left: recorded on neither credit.
    const replayed = { id: `evt_${randomBytes(6).toString('hex')}`, object: 'event', type: 'customer.deleted', created: 1, data: { object: { id: customer, object: 'customer', balance: 0, currency: 'usd' } } };
    const applied = await rig.facts.applyEvent(replayed as never, { again: false });
    expect(applied.map((one) => one.appended)).toEqual([0, 0]);
    await settled();
    for (const effectId of [older, newer]) expect((await rig.observed(effectId)).filter((entry) => entry.eventType === 'customer.deleted')).toHaveLength(1);
    expect((await rig.receipt(newer)).finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'customer_deleted' });
    expect(await lostAlerts([older, newer])).toEqual([{ effectId: newer, centsAtStake: 1_000 }]);
  }, 60_000);

  it('leaves the older credit returned when the balance held only part of it beside the newer one', async () => {
    const { customer, older, newer } = await twoCreditsThenInvoice('Two credits, half of one used', 500);
    await rig.stripe.customers.del(customer);
    await settled();
    await rig.until(newer, (v) => v.finalMoney.status === 'not_returned', 10_000);
    await settled();
    expect((await rig.receipt(older)).finalMoney).toMatchObject({ status: 'returned', failureReason: null });
    expect(await lostAlerts([older, newer])).toEqual([{ effectId: newer, centsAtStake: 1_000 }]);
  }, 60_000);
});
