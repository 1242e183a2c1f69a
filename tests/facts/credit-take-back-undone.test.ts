// Rule (DESIGN §3 F, §8; facts/apply.ts applyCredits, core/final-money.ts): a credit's final money agrees with the money
// at Stripe. A debit labelled with the effect (metadata interlock_effect_id) takes its credit back; Stripe cannot delete
// a balance transaction, so a take-back made by mistake is undone by a new credit labelled the same way (a re-credit).
// The facts record it and net it against the labelled debits: the customer holds the credit again, so the receipt reads
// returned, not not_returned. A re-credit before any take-back gives the customer money beyond the credit: the credit
// still reads returned, counted once (the excess is logged). A re-credit tagged with the incident, as the
// compensated_twice action labels its debit, undoes that debit like any other: no second compensation (only what one
// gives beyond the debits is a second credit for the incident: own-credit-metadata-edited.test.ts). A credit another
// effect committed, relabelled with this effect's id, is no re-credit (one credit is one effect's money), nor is one
// made before the effect's own credit (it cannot undo a later take-back). A re-credit whose label goes away and comes
// back reads as a re-credit again: the fact's role coming back is recorded, not dropped as a duplicate.
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

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

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

  it('another effect\'s credit relabelled with the effect\'s id does not undo its take-back: one credit counts on one receipt', async () => {
    // Rule: a balance transaction another effect committed is that effect's alone, whatever its metadata names now.
    const customer = await rig.stripe.customers.create({ email: 're-credit-claimed@example.com' });
    const first = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident: 'inc_undone_4' });
    await settled();
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 500, currency: 'usd', metadata: { interlock_effect_id: first } });
    await reread(first);
    expect((await rig.receipt(first)).finalMoney.status).toBe('not_returned');
    const second = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident: 'inc_undone_5' });
    await settled();
    const listed = await rig.stripe.customers.listBalanceTransactions(customer.id, { limit: 100 });
    const secondCredit = listed.data.find((move) => move.metadata?.interlock_effect_id === second);
    if (secondCredit === undefined) throw new Error('the second effect made no balance credit');
    // Relabelled in the Dashboard to name the first effect.
    await rig.stripe.customers.updateBalanceTransaction(customer.id, secondCredit.id, { metadata: { interlock_effect_id: first } });
    await reread(first);
    await reread(second);
    expect(await balanceOf(customer.id)).toBe(-500);
    expect((await rig.receipt(second)).finalMoney.status).toBe('returned');
    expect((await rig.receipt(first)).finalMoney.status).toBe('not_returned');
    expect((await rig.observed(first)).filter((entry) => entry.objectId === secondCredit.id)).toHaveLength(0);
    expect(rig.warnings.some((line) => line.effectId === first && line.object === secondCredit.id && line.why === `committed by effect ${second}`)).toBe(true);
  });

  it('a credit made before the effect\'s own, labelled with it afterwards, does not undo its take-back', async () => {
    // Rule: a re-credit undoes a take-back, which comes after the credit; one older than the credit cannot.
    const customer = await rig.stripe.customers.create({ email: 're-credit-older@example.com' });
    const older = await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: -300, currency: 'usd' });
    // Stripe's `created` is in seconds: the effect's credit is made in a later one.
    await pause(1_100);
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident: 'inc_undone_6' });
    await settled();
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 500, currency: 'usd', metadata: { interlock_effect_id: effectId } });
    await rig.stripe.customers.updateBalanceTransaction(customer.id, older.id, { metadata: { interlock_effect_id: effectId } });
    await reread(effectId);
    expect(await balanceOf(customer.id)).toBe(-300);
    expect((await rig.receipt(effectId)).finalMoney.status).toBe('not_returned');
    expect(rig.warnings.some((line) => line.effectId === effectId && line.object === older.id && typeof line.why === 'string' && line.why.startsWith('made before its credit'))).toBe(true);
  });

  it('a re-credit whose label went away and came back reads returned again', async () => {
    // Rule: the final money follows Stripe now, whatever it passed through: a fact's role coming back is a new fact.
    const customer = await rig.stripe.customers.create({ email: 're-credit-flip@example.com' });
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident: 'inc_undone_7' });
    await settled();
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 500, currency: 'usd', metadata: { interlock_effect_id: effectId } });
    await reread(effectId);
    expect((await rig.receipt(effectId)).finalMoney.status).toBe('not_returned');
    const reCredit = await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'usd', metadata: { interlock_effect_id: effectId } });
    await reread(effectId);
    expect((await rig.receipt(effectId)).finalMoney.status).toBe('returned');
    // A typo in the Dashboard names something else for a while, and is put back, twice.
    for (let round = 0; round < 2; round += 1) {
      await rig.stripe.customers.updateBalanceTransaction(customer.id, reCredit.id, { metadata: { interlock_effect_id: 'eff_typo' } });
      await reread(effectId);
      expect((await rig.receipt(effectId)).finalMoney.status).toBe('not_returned');
      await rig.stripe.customers.updateBalanceTransaction(customer.id, reCredit.id, { metadata: { interlock_effect_id: effectId } });
      await reread(effectId);
      expect(await balanceOf(customer.id)).toBe(-500);
      expect((await rig.receipt(effectId)).finalMoney.status).toBe('returned');
    }
    // Re-reads that find nothing new append nothing.
    const recorded = (await rig.observed(effectId)).filter((entry) => entry.objectId === reCredit.id).length;
    expect(recorded).toBe(5);
    await reread(effectId);
    expect((await rig.observed(effectId)).filter((entry) => entry.objectId === reCredit.id)).toHaveLength(recorded);
  });
});
