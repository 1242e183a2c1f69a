// Rule (DESIGN §3 F, §8; facts/apply.ts applyCredits, core/final-money.ts): a credit's final money agrees with the money
// at Stripe. A debit labelled with the effect (metadata interlock_effect_id) takes its credit back; Stripe cannot delete
// a balance transaction, so a take-back made by mistake is undone by a new credit labelled the same way (a re-credit).
// The facts record it and net it against the labelled debits: the customer holds the credit again, so the receipt reads
// returned, not not_returned. A re-credit before any take-back gives the customer money beyond the credit: the credit
// still reads returned, counted once (the excess is logged). A re-credit tagged with the incident, as the
// compensated_twice action labels its debit, undoes that debit like any other: no second compensation (only what one
// gives beyond the debits is a second credit for the incident: own-credit-metadata-edited.test.ts).
import { describe, expect, it } from 'vitest';
import { sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

async function reread(effectId: string): Promise<void> {
  await settled();
  await rig.facts.reread(effectId);
  await settled();
}

const balanceOf = async (customer: string) => ((await rig.stripe.customers.retrieve(customer)) as { balance: number }).balance;

describe('a take-back that was itself undone', () => {
  it('reads returned again: the customer holds the credit', async () => {
    const customer = await rig.stripe.customers.create({ email: 'take-back-undone@example.com' });
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident: 'inc_undone_1' });
    await settled();
    // Taken back by mistake, labelled as the alerts say...
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 500, currency: 'usd', metadata: { interlock_effect_id: effectId } });
    await reread(effectId);
    expect((await rig.receipt(effectId)).finalMoney.status).toBe('not_returned');
    // ...and given back, labelled the same way.
    const again = await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'usd', metadata: { interlock_effect_id: effectId } });
    await reread(effectId);
    expect(await balanceOf(customer.id)).toBe(-500);
    expect(await rig.receipt(effectId)).toMatchObject({ valid: true, happenedOnce: true, finalMoney: { status: 'returned' }, answerMatchesFinalMoney: true });
    expect((await rig.observed(effectId)).filter((entry) => entry.objectId === again.id)).toHaveLength(1);
    expect(rig.warnings.some((line) => line.object === again.id)).toBe(false);
  });

  it('a re-credit before any take-back counts the credit once: returned, and the money beyond it is logged', async () => {
    const customer = await rig.stripe.customers.create({ email: 're-credit-first@example.com' });
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident: 'inc_undone_2' });
    await settled();
    const extra = await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: -300, currency: 'usd', metadata: { interlock_effect_id: effectId } });
    await reread(effectId);
    expect(await balanceOf(customer.id)).toBe(-800);
    expect(await rig.receipt(effectId)).toMatchObject({ valid: true, happenedOnce: true, finalMoney: { status: 'returned' }, answerMatchesFinalMoney: true, compensatedTwice: null });
    expect(rig.warnings.some((line) => line.effectId === effectId && line.beyond === 300 && Array.isArray(line.objects) && line.objects.includes(extra.id))).toBe(true);
    // A $5 take-back afterwards is netted against the $3 re-credit: $2 of the credit is taken back, $3 of it is left.
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 500, currency: 'usd', metadata: { interlock_effect_id: effectId } });
    await reread(effectId);
    expect(await balanceOf(customer.id)).toBe(-300);
    expect((await rig.receipt(effectId)).finalMoney.status).toBe('returned');
  });

  it('a re-credit labelled as the compensated_twice action labels its debit is no second compensation', async () => {
    const customer = await rig.stripe.customers.create({ email: 're-credit-tagged@example.com' });
    const incident = 'inc_undone_3';
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident });
    await settled();
    const label = { interlock_effect_id: effectId, interlock_incident: incident };
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 500, currency: 'usd', metadata: label });
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'usd', metadata: label });
    await reread(effectId);
    expect(await rig.receipt(effectId)).toMatchObject({ valid: true, finalMoney: { status: 'returned' }, answerMatchesFinalMoney: true, compensatedTwice: null });
    expect(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toBeNull();
  });
});
