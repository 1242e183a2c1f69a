// Rule (facts/apply.ts creditObserved; final-money.ts deriveSecondCompensation): the facts worker records a credit
// note for the credit's incident with the note's own currency, so the receipt of a landed usd credit names a ¥700 note
// for the incident as 700 JPY (its compensated_twice alert too), never as $7.00, and weighs nothing in yen against cents.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

describe('a credit note in another currency recorded on a credit', () => {
  it('carries its currency, and the compensated_twice alert states it in it', async () => {
    const customer = await rig.stripe.customers.create({ name: 'Billed in usd' });
    await rig.stripe.invoiceItems.create({ customer: customer.id, amount: 3_000, currency: 'usd' });
    const usd = await rig.stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: 'include' });
    await rig.stripe.invoices.finalizeInvoice(usd.id ?? '');
    await rig.stripe.invoiceItems.create({ customer: customer.id, amount: 3_000, currency: 'jpy' });
    const jpy = await rig.stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: 'include' });
    await rig.stripe.invoices.finalizeInvoice(jpy.id ?? '');
    const incident = `INC-${randomBytes(3).toString('hex')}`;
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident });
    await settled();
    const note = await rig.stripe.creditNotes.create({ invoice: jpy.id ?? '', amount: 700, metadata: { incident } });
    await settled();
    const entries = (await rig.stores.journal.receipt(effectId))?.entries ?? [];
    const recorded = entries.flatMap((entry) => (entry.kind === 'OBSERVED' && entry.objectId === note.id ? [entry.currency] : []));
    expect(recorded.length).toBeGreaterThan(0);
    expect(new Set(recorded)).toEqual(new Set(['jpy']));
    const receipt = await rig.receipt(effectId);
    expect(receipt.compensatedTwice).toMatchObject({ cents: 500, notesCents: 0, currency: 'usd', elsewhere: [{ creditNote: note.id, amount: 700, currency: 'jpy' }] });
    const alert = await rig.stores.alerts.get(`compensated_twice:${effectId}`);
    expect(alert).toMatchObject({ centsAtStake: 500, currency: 'usd' });
    expect(alert?.sentence).toContain(`credit note ${note.id} (700 JPY)`);
    expect(alert?.sentence).not.toContain('$7.00');
  });
});
