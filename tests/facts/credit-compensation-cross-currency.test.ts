// Rule (credit-target.ts header, incidentCompensation; facts/apply.ts applyCredits; final-money.ts
// deriveSecondCompensation): Stripe keeps a balance per currency, so a balance move in another currency than the
// credit's moves none of the balance the credit is in. A debit tagged with the incident in eur does not take back
// billing's usd credit for it: the customer billed in usd still holds billing's compensation, the gate refuses a second
// credit for the incident (incident_already_compensated), and a receipt whose credit landed before billing's shows the
// customer compensated twice.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

/** Billing's SLA credit for the incident in usd (the customer's currency), and a debit tagged with it in eur. */
async function billingThenForeignDebit(customer: string, incident: string) {
  const before = await rig.stripe.customers.retrieve(customer);
  const held = 'balance' in before ? before.balance : 0;
  const credit = await rig.stripe.customers.createBalanceTransaction(customer, { amount: -700, currency: 'usd', metadata: { incident } });
  const debit = await rig.stripe.customers.createBalanceTransaction(customer, { amount: 700, currency: 'eur', metadata: { incident } });
  const live = await rig.stripe.customers.retrieve(customer);
  // The eur debit took nothing out of the usd balance: billing's $7.00 stands.
  expect(live).toMatchObject({ currency: 'usd', balance: held - 700 });
  return { credit, debit };
}

describe('incident compensation across currencies', () => {
  it('refuses a second credit for an incident whose usd compensation a tagged eur debit did not take back', async () => {
    const customer = await rig.stripe.customers.create({ name: 'Billed in usd' });
    const incident = `INC-${randomBytes(3).toString('hex')}`;
    await billingThenForeignDebit(customer.id, incident);
    const effectId = await rig.submit({ kind: 'credit', customer: customer.id, amount: 1_000, incident });
    const answer = await rig.effects.waitFor(effectId, 15_000);
    expect(answer?.outcome).toBe('REFUSED:target_error');
    expect((await rig.receipt(effectId)).refused?.reason).toContain(`Incident ${incident} was already compensated $7.00`);
    const usdCredits = (await rig.stripe.customers.listBalanceTransactions(customer.id, { limit: 100 })).data.filter((t) => t.currency === 'usd' && t.amount < 0);
    expect(usdCredits).toHaveLength(1);
  });

  it('a receipt whose credit landed first shows billing\'s usd credit as a second compensation, whatever eur debit is tagged with the incident', async () => {
    const customer = await rig.stripe.customers.create({ name: 'Credited, then billing too' });
    const incident = `INC-${randomBytes(3).toString('hex')}`;
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 1_000, incident });
    await settled();
    const { credit, debit } = await billingThenForeignDebit(customer.id, incident);
    await settled();
    // A re-read (the reconciler's) sees both at once, whatever order their events were taken in.
    await rig.facts.reread(effectId);
    await settled();
    const observed = (await rig.observed(effectId)).map((entry) => entry.objectId);
    expect(observed).toContain(credit.id);
    expect(observed).not.toContain(debit.id);
    const receipt = await rig.receipt(effectId);
    expect(receipt.finalMoney.status).toBe('returned');
    expect(receipt.compensatedTwice).toMatchObject({ cents: 700, balanceCredits: [credit.id], currency: 'usd' });
  });
});
