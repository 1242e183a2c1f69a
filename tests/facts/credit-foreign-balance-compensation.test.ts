// Rule (facts/apply.ts applyCredits, creditObserved; final-money.ts deriveSecondCompensation; as the credit target
// refuses before a send, stripe/credit-target.ts incidentCompensation): a credit that landed, after which billing
// compensates the same incident with a balance credit tagged with it in another currency (a usd customer's ¥700 for a
// jpy invoice), shows the customer compensated twice: the facts worker records billing's credit with its currency, the
// receipt names it `elsewhere` in yen (never as cents, never weighed against the credit: the whole credit is at stake),
// and the compensated_twice alert is raised. Billing's tagged debit in that currency nets it away, and the alert
// resolves itself; a tagged debit in a currency where billing holds no tagged credit is not recorded.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

describe("billing's balance credit for the incident in another currency, after the credit landed", () => {
  it('is recorded with its currency, is a second compensation in yen, and raises compensated_twice until billing takes it back', async () => {
    const customer = await rig.stripe.customers.create({ name: 'Billed in usd, jpy invoice' });
    const incident = `INC-${randomBytes(3).toString('hex')}`;
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 1_000, incident });
    await settled();
    const yen = await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: -700, currency: 'jpy', metadata: { incident } });
    const euro = await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 500, currency: 'eur', metadata: { incident } });
    await settled();
    await rig.facts.reread(effectId);
    await settled();

    const entries = (await rig.stores.journal.receipt(effectId))?.entries ?? [];
    const recorded = entries.flatMap((entry) => (entry.kind === 'OBSERVED' && entry.objectId === yen.id ? [entry] : []));
    expect(recorded.length).toBeGreaterThan(0);
    expect(recorded.at(-1)).toMatchObject({ incident, currency: 'jpy', customerCurrency: 'usd', amount: -700 });
    // A tagged eur debit where billing holds no tagged eur credit takes back nothing anywhere.
    expect(entries.some((entry) => entry.kind === 'OBSERVED' && entry.objectId === euro.id)).toBe(false);

    const receipt = await rig.receipt(effectId);
    expect(receipt.finalMoney.status).toBe('returned');
    expect(receipt.compensatedTwice).toMatchObject({ cents: 1_000, notesCents: 0, currency: 'usd', balanceCredits: [yen.id], elsewhere: [{ creditNote: yen.id, amount: 700, currency: 'jpy', kind: 'balance credit' }] });
    const alert = await rig.stores.alerts.get(`compensated_twice:${effectId}`);
    expect(alert).toMatchObject({ centsAtStake: 1_000, currency: 'usd', resolvedAt: null });
    expect(alert?.sentence).toContain(`balance credit ${yen.id} (700 JPY)`);
    expect(alert?.sentence).not.toContain('$7.00');

    // Billing takes its yen credit back with a debit tagged with the incident in yen: nothing compensates it twice.
    const back = await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 700, currency: 'jpy', metadata: { incident } });
    await settled();
    await rig.facts.reread(effectId);
    await settled();
    expect((await rig.observed(effectId)).map((entry) => entry.objectId)).toContain(back.id);
    expect((await rig.receipt(effectId)).compensatedTwice).toBeNull();
    expect(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toMatchObject({ resolvedBy: 'facts' });
  });
});
