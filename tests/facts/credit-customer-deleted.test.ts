// Rule (DESIGN §3 F; core/post-send.ts CREDIT_EVENTS, facts/apply.ts applyDeletion, core/final-money.ts
// wipedByDeletion): Stripe never invoices a deleted customer again, so a balance credit still unused when its customer
// is deleted reaches no one. `customer.deleted` is a post-send fact: recorded once on the credit's receipt, whose final
// money then reads `not_returned` (`customer_deleted`) and no longer matches the gate's answer. A re-read of the deleted
// customer (which Stripe answers with a stub and no balance) neither undoes that nor fails. A credit used in part
// before the deletion stays `returned`. The lost credit raises a failed_after_landed alert: a person must make it good.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

describe('a credit whose customer is deleted', () => {
  it('reads not_returned (customer_deleted) once the customer is deleted with the credit unused, recorded once', async () => {
    const customer = await rig.stripe.customers.create({ name: 'Deleted before the next invoice' });
    const incident = `INC-${randomBytes(3).toString('hex')}`;
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 1_000, incident });
    await rig.until(effectId, (v) => v.finalMoney.status === 'returned');
    expect(await rig.stripe.customers.retrieve(customer.id)).toMatchObject({ balance: -1_000 });
    await rig.stripe.customers.del(customer.id);
    await settled();
    const after = await rig.until(effectId, (v) => v.finalMoney.status !== 'returned', 10_000);
    expect(after.finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'customer_deleted', customerDeleted: { balance: -1_000, currency: 'usd' } });
    expect(after.answer).toBe('returned');
    expect(after.answerMatchesFinalMoney).toBe(false);
    expect(after.compensatedTwice).toBeNull();
    const deletions = (await rig.observed(effectId)).filter((entry) => entry.eventType === 'customer.deleted');
    expect(deletions).toHaveLength(1);
    expect(deletions[0]?.status).toBe('customer_deleted');
    // Someone is told: the gate said given, the customer got nothing, and only a person can make it good.
    const raised = (await rig.stores.alerts.list()).filter((alert) => alert.effectId === effectId);
    expect(raised.map((alert) => ({ kind: alert.kind, centsAtStake: alert.centsAtStake, currency: alert.currency, open: alert.resolvedAt === null }))).toEqual([{ kind: 'failed_after_landed', centsAtStake: 1_000, currency: 'usd', open: true }]);
    expect(raised[0]?.sentence).toMatch(/still unused when the customer was deleted/);

    // The event delivered again, and the reconciler's re-read of the deleted customer: nothing new, the answer stands.
    const delivered = rig.applied.find(({ event }) => event.type === 'customer.deleted' && event.data.object.id === customer.id);
    expect(delivered).toBeDefined();
    if (delivered !== undefined) expect((await rig.facts.applyEvent(delivered.event, { again: true })).map((applied) => applied.appended)).toEqual([0]);
    expect((await rig.facts.reread(effectId)).every((applied) => applied.appended === 0)).toBe(true);
    await settled();
    expect((await rig.observed(effectId)).filter((entry) => entry.eventType === 'customer.deleted')).toHaveLength(1);
    expect((await rig.receipt(effectId)).finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'customer_deleted' });
  });

  it('stays returned when only part of the credit was left in the balance at the deletion', async () => {
    const customer = await rig.stripe.customers.create({ name: 'Used part of it' });
    const incident = `INC-${randomBytes(3).toString('hex')}`;
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 1_000, incident });
    await settled();
    // A $6.00 invoice takes $6.00 of the credit when it is finalized; $4.00 is left when the customer is deleted.
    await rig.stripe.invoiceItems.create({ customer: customer.id, amount: 600, currency: 'usd' });
    const draft = await rig.stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: 'include' });
    await rig.stripe.invoices.finalizeInvoice(draft.id ?? '');
    expect(await rig.stripe.customers.retrieve(customer.id)).toMatchObject({ balance: -400 });
    await settled();
    await rig.stripe.customers.del(customer.id);
    await settled();
    const deletions = (await rig.observed(effectId)).filter((entry) => entry.eventType === 'customer.deleted');
    expect(deletions).toHaveLength(1);
    expect((await rig.receipt(effectId)).finalMoney).toMatchObject({ status: 'returned', failureReason: null });
    expect((await rig.stores.alerts.list()).filter((alert) => alert.effectId === effectId)).toEqual([]);
  });
});
