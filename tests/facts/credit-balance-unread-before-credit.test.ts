// Rule (facts/apply.ts applyCredits `unread`; README `customer.updated` row): a `customer.updated` that moved the balance
// before a credit was made cannot have used that credit or taken it back, so applied (redelivered) after the customer's
// deletion it records no unread move on that credit: a credit that read `returned` stays `returned`, with no alert. Only
// a move announced strictly before the credit's `created` (Stripe's seconds) is passed over: one in the same second may
// have come after it, and is recorded as unread.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BALANCE_UNREAD } from '../../src/core/final-money.js';
import type { StripeEvent } from '../../src/interlock.js';
import { sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

/**
 * Billing's own $5 credit (a customer.updated that moved the balance), a minute later the gate's $10 credit, a $10
 * invoice read live, then the customer deleted holding $5. Returns the old event, the credit's effect and its `created`.
 */
async function oldMoveThenDeleted(): Promise<{ older: StripeEvent; effectId: string; made: number }> {
  const customer = await rig.stripe.customers.create({ name: `older-move-${randomBytes(3).toString('hex')}` });
  await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'usd', description: 'goodwill' });
  await settled();
  const older = rig.applied.find(({ event }) => event.type === 'customer.updated' && event.data.object.id === customer.id)?.event;
  if (older === undefined) throw new Error('no customer.updated');
  expect(older.data.previous_attributes).toHaveProperty('balance');
  await rig.sandbox.control.advanceClock(60);
  const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 1_000, incident: `INC-${randomBytes(3).toString('hex')}` });
  await settled();
  const own = (await rig.observed(effectId)).find((fact) => fact.objectId.startsWith('cbtxn'))?.objectId ?? '';
  const made = (await rig.stripe.customers.retrieveBalanceTransaction(customer.id, own)).created;
  await rig.stripe.invoiceItems.create({ customer: customer.id, amount: 1_000, currency: 'usd' });
  const draft = await rig.stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: 'include' });
  await rig.stripe.invoices.finalizeInvoice(draft.id ?? '');
  await settled();
  await rig.stripe.customers.del(customer.id);
  await settled();
  expect((await rig.receipt(effectId)).finalMoney.status).toBe('returned');
  return { older, effectId, made };
}

async function reading(effectId: string) {
  const after = await rig.receipt(effectId);
  return {
    unread: (await rig.observed(effectId)).filter((fact) => fact.status === BALANCE_UNREAD).length,
    status: after.finalMoney.status,
    failureReason: after.finalMoney.failureReason,
    alerts: (await rig.stores.alerts.list()).filter((alert) => alert.effectId === effectId).map((alert) => alert.kind),
  };
}

describe('a customer.updated that moved the balance, redelivered after the deletion', () => {
  it('records no unread move on a credit made after it: the credit stays returned, with no alert', async () => {
    const { older, effectId, made } = await oldMoveThenDeleted();
    expect(older.created ?? 0).toBeLessThan(made);
    // Stripe delivers the old event again (its first delivery's answer was lost).
    await rig.facts.applyEvent(older, { again: true });
    await settled();
    expect(await reading(effectId)).toEqual({ unread: 0, status: 'returned', failureReason: null, alerts: [] });
  }, 60_000);

  it('still records a move announced in the second the credit was made as unread: it may have come after it', async () => {
    const { older, effectId, made } = await oldMoveThenDeleted();
    await rig.facts.applyEvent({ ...older, id: `evt_same_second_${randomBytes(4).toString('hex')}`, created: made });
    await settled();
    expect(await reading(effectId)).toEqual({ unread: 1, status: 'unknown', failureReason: BALANCE_UNREAD, alerts: ['failed_after_landed'] });
  }, 60_000);
});
