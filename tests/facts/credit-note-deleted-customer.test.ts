// Rule (stripe/facts-reader.ts creditsOf): what Stripe can still show of a customer is read and recorded even when
// another of its lists can no longer be read. Stripe 404s a deleted customer's balance transactions, for good, while its
// credit notes stay listable: a credit note voided just before the customer is deleted, its events applied only after
// the deletion (the facts worker was behind, in order or reversed), is recorded void, and the `compensated_twice` alert
// it raised resolves, as it does when the void is applied live. One 404 drops its own list, nothing else.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createStripeClient } from '../../src/stripe/client.js';
import { createFactsReader } from '../../src/stripe/facts-reader.js';
import { answerOf, SANDBOX_KEY, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

/** A credit, billing's note for its incident, then the note voided and the customer deleted, delivered as `release` says. */
async function voidedThenDeleted(release: 'live' | 'fifo' | 'reverse') {
  const customer = await rig.stripe.customers.create({ email: `void-${randomBytes(3).toString('hex')}@example.com` });
  const incident = `INC-${randomBytes(3).toString('hex')}`;
  const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident });
  await settled();
  await rig.stripe.invoiceItems.create({ customer: customer.id, amount: 3_000, currency: 'usd' });
  const draft = await rig.stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: 'include' });
  const invoice = await rig.stripe.invoices.finalizeInvoice(draft.id ?? '');
  const note = await rig.stripe.creditNotes.create({ invoice: invoice.id ?? '', amount: 700, metadata: { incident } });
  await settled();
  expect(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toMatchObject({ resolvedAt: null });
  if (release !== 'live') await rig.sandbox.control.addRule({ action: 'hold', count: 1_000 });
  await rig.stripe.creditNotes.voidCreditNote(note.id);
  if (release === 'live') await settled();
  await rig.stripe.customers.del(customer.id);
  if (release !== 'live') {
    await rig.sandbox.control.clearRules();
    await rig.sandbox.control.release(release);
  }
  await settled();
  const verification = await rig.receipt(effectId);
  const alert = await rig.stores.alerts.get(`compensated_twice:${effectId}`);
  return { customer: customer.id, note: note.id, answer: answerOf(verification), compensatedTwice: verification.compensatedTwice, alertOpen: alert === null ? null : alert.resolvedAt === null };
}

describe("a deleted customer's credit notes", () => {
  it('are still listed by the facts reader while its balance transactions answer 404', async () => {
    const { customer, note } = await voidedThenDeleted('live');
    await expect(rig.stripe.customers.listBalanceTransactions(customer)).rejects.toMatchObject({ statusCode: 404 });
    const credits = await createFactsReader(createStripeClient({ secretKey: SANDBOX_KEY, apiBase: rig.sandbox.url })).creditsOf(customer);
    expect(credits).toEqual([expect.objectContaining({ id: note, objectType: 'credit_note', status: 'void', customerCurrency: null })]);
  });

  it('record a void applied after the deletion, so compensated_twice resolves whatever order the events come in', async () => {
    const live = await voidedThenDeleted('live');
    expect(live.alertOpen).toBe(false);
    expect(live.compensatedTwice).toBeNull();
    for (const release of ['fifo', 'reverse'] as const) {
      const late = await voidedThenDeleted(release);
      expect({ release, answer: late.answer, compensatedTwice: late.compensatedTwice, alertOpen: late.alertOpen }).toEqual({ release, answer: live.answer, compensatedTwice: null, alertOpen: false });
    }
  });
});
