// Rule (facts/apply.ts applyCredits, core/final-money.ts): a credit's own balance transaction (the one its send made, whose id its COMMITTED entry records) is never
// "another party's compensation" for its incident, whatever its metadata says later. Metadata is a lead, not proof
// (as for refunds: "Once the effect committed a refund, that one is its own, whatever its metadata now says").
// Editing the gate's own balance credit at Stripe (clearing or changing `interlock_effect_id`, keeping
// `interlock_incident`) must not make the receipt say the customer was compensated twice, nor raise
// `compensated_twice` telling a person to debit the customer.
import { describe, expect, it } from 'vitest';
import { sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

async function ownTransaction(effectId: string): Promise<string> {
  const bundle = await rig.stores.journal.receipt(effectId);
  const committed = bundle?.entries.find((entry) => entry.kind === 'COMMITTED');
  const id = (committed as { result?: { id?: string } } | undefined)?.result?.id;
  if (typeof id !== 'string') throw new Error(`no committed balance transaction on ${effectId}: ${JSON.stringify(committed)}`);
  return id;
}

describe('credits: the own balance credit with its metadata edited at Stripe', () => {
  for (const edit of [{ how: 'cleared', value: '' }, { how: 'changed to another id', value: 'f'.repeat(64) }]) {
    it(`its effect id ${edit.how}: the receipt does not say compensated twice`, async () => {
      const customer = await rig.stripe.customers.create({ email: `meta-${edit.how.length}@example.com` });
      const incident = `inc_meta_${edit.how.length}`;
      const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident });
      await settled();
      const txn = await ownTransaction(effectId);
      expect((await rig.receipt(effectId)).compensatedTwice).toBeNull();

      // Someone edits the gate's own balance credit at Stripe: the effect id goes, the incident tag stays.
      await rig.stripe.customers.updateBalanceTransaction(customer.id, txn, { metadata: { interlock_effect_id: edit.value } });
      // The reconciler's re-read (or any later customer.updated) reads the customer's credits again.
      await rig.facts.reread(effectId);
      await settled();

      const verification = await rig.receipt(effectId);
      // Only one credit exists for the incident at Stripe: this effect's own.
      const all = await rig.stripe.customers.listBalanceTransactions(customer.id);
      expect(all.data.filter((t) => t.amount < 0).map((t) => t.id)).toEqual([txn]);
      expect(verification.finalMoney.status).toBe('returned');
      expect.soft(verification.compensatedTwice).toBeNull();
      expect.soft(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toBeNull();
    });
  }

  it('a second balance credit carrying the committed credit\'s effect id, amount and incident is a second compensation, not the credit itself', async () => {
    const customer = await rig.stripe.customers.create({ email: 'copy@example.com' });
    const incident = 'inc_meta_copy';
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident });
    await settled();
    const txn = await ownTransaction(effectId);
    // Another balance credit for the incident, labelled as the gate labels its own (a copy made by a script or a second
    // deployment replaying the request after Stripe forgot the key): the customer now holds two credits for one incident.
    const copy = await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'usd', metadata: { interlock_effect_id: effectId, interlock_incident: incident } });
    await rig.facts.reread(effectId);
    await settled();
    const all = await rig.stripe.customers.listBalanceTransactions(customer.id);
    expect(all.data.filter((t) => t.amount < 0).map((t) => t.id).sort()).toEqual([txn, copy.id].sort());
    const verification = await rig.receipt(effectId);
    // The effect committed `txn`; `copy` is someone else's second compensation for the incident.
    expect(verification.compensatedTwice).toMatchObject({ balanceCredits: [copy.id] });
  });
});

