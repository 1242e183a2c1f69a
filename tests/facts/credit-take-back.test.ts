// Rule (DESIGN §3 F, §8; core/alert-rules.ts compensated_twice, facts/apply.ts applyCredits, core/final-money.ts): a
// credit's receipt answers with the final money at Stripe once the credit is taken back. The facts count a debit as
// this credit taken back only when its metadata names the effect (`interlock_effect_id`), so the compensated_twice
// alert's action must say so: a person who does exactly what it says is seen by the receipt. Once the credit landed,
// any labelled debit counts, a larger one as the whole of what is left of the credit (the excess is logged, not
// counted); the part paid twice is what is left of the credit against billing's compensation. Billing's own debit
// tagged with the incident takes billing's tagged credit back, so that credit no longer pays the customer twice.
import { describe, expect, it } from 'vitest';
import { sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

/** An open invoice of $30 for the customer, to hang credit notes on. */
async function openInvoice(customer: string) {
  await rig.stripe.invoiceItems.create({ customer, amount: 3_000, currency: 'usd' });
  const draft = await rig.stripe.invoices.create({ customer, pending_invoice_items_behavior: 'include' });
  return rig.stripe.invoices.finalizeInvoice(draft.id ?? '');
}

/** The `metadata[key]=value` pairs the action tells the person to send with the debit. */
function labelIn(action: string): Record<string, string> {
  return Object.fromEntries([...action.matchAll(/metadata\[(\w+)\]=([^\s`]+)/g)].map((match) => [match[1] ?? '', match[2] ?? '']));
}

describe('taking a credit back', () => {
  it('a debit made exactly as the compensated_twice action says is seen by the receipt, and the alert resolves itself', async () => {
    const customer = await rig.stripe.customers.create({ email: 'takeback@example.com' });
    const incident = 'inc_takeback_1';
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident });
    await settled();
    const invoice = await openInvoice(customer.id);
    await rig.stripe.creditNotes.create({ invoice: invoice.id ?? '', amount: 700, metadata: { incident } });
    await settled();
    const alert = await rig.stores.alerts.get(`compensated_twice:${effectId}`);
    expect(alert).toMatchObject({ kind: 'compensated_twice', resolvedAt: null });
    const action = alert?.action ?? '';

    // The person reads the action and does what it says, nothing more: the amount, currency and label it names.
    const label = labelIn(action);
    expect(label).toEqual({ interlock_effect_id: effectId, interlock_incident: incident });
    expect(action).toContain('amount=500');
    expect(action).toContain('currency=usd');
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 500, currency: 'usd', description: `take back credit for ${incident}`, metadata: label });
    await settled();
    await rig.facts.reread(effectId);
    await settled();

    const verification = await rig.receipt(effectId);
    expect({ finalMoney: verification.finalMoney.status, compensatedTwice: verification.compensatedTwice }).toEqual({ finalMoney: 'not_returned', compensatedTwice: null });
    expect(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toMatchObject({ resolvedBy: 'facts', resolvedAt: expect.any(Number) });
  });

  it('a labelled debit larger than the credit takes it back in full; the excess is logged, not counted', async () => {
    const customer = await rig.stripe.customers.create({ email: 'takeback2@example.com' });
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident: 'inc_takeback_2' });
    await settled();
    const debit = await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 600, currency: 'usd', description: 'reverse credit and $1 fee', metadata: { interlock_effect_id: effectId } });
    await settled();
    await rig.facts.reread(effectId);
    await settled();
    const verification = await rig.receipt(effectId);
    expect(verification).toMatchObject({ valid: true, answer: 'returned', finalMoney: { status: 'not_returned', failureReason: null }, answerMatchesFinalMoney: false });
    // Recorded as Stripe has it: the receipt's evidence is the debit itself, capped only where it is counted.
    expect((await rig.observed(effectId)).filter((entry) => entry.objectId === debit.id)).toHaveLength(1);
    expect(rig.warnings.some((line) => line.object === debit.id && line.counted === 500)).toBe(true);
  });

  it('the part paid twice counts only what is left of the credit after labelled debits', async () => {
    const customer = await rig.stripe.customers.create({ email: 'takeback3@example.com' });
    const incident = 'inc_takeback_3';
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident });
    await settled();
    const invoice = await openInvoice(customer.id);
    await rig.stripe.creditNotes.create({ invoice: invoice.id ?? '', amount: 400, metadata: { incident } });
    await settled();
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 200, currency: 'usd', description: 'partly reverse', metadata: { interlock_effect_id: effectId } });
    await settled();
    await rig.facts.reread(effectId);
    await settled();
    // $3 of the $5 credit is left beside billing's $4 note: $3 is paid twice, and the alert puts $3 at stake.
    expect((await rig.receipt(effectId)).compensatedTwice).toMatchObject({ cents: 300, ownCents: 500, reversedCents: 200, notesCents: 400 });
    const alert = await rig.stores.alerts.get(`compensated_twice:${effectId}`);
    expect(alert).toMatchObject({ centsAtStake: 300, resolvedAt: null });
    expect(alert?.action).toContain('amount=300');
  });

  it('billing taking back its own tagged credit for the incident resolves compensated_twice', async () => {
    const customer = await rig.stripe.customers.create({ email: 'takeback4@example.com' });
    const incident = 'inc_takeback_4';
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident });
    await settled();
    const credit = await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: -700, currency: 'usd', metadata: { incident, source: 'billing-sla-automation' } });
    await settled();
    expect(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toMatchObject({ refund: credit.id, resolvedAt: null });

    // Billing issued its SLA credit in error and debits it again, tagged with the incident: it compensates nothing now.
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 700, currency: 'usd', description: 'SLA credit issued in error', metadata: { incident, source: 'billing-sla-automation' } });
    await settled();
    await rig.facts.reread(effectId);
    await settled();
    expect(await rig.receipt(effectId)).toMatchObject({ valid: true, finalMoney: { status: 'returned' }, answerMatchesFinalMoney: true, compensatedTwice: null });
    expect(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toMatchObject({ resolvedBy: 'facts', resolvedAt: expect.any(Number) });
  });
});
