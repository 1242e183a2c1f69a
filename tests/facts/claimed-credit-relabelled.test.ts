// Rule: a balance credit one credit effect committed is that effect's own and no other's: relabelled at Stripe with the
// id of another credit effect of the same amount on the same customer, one that was sent and refused, it must not be
// recorded as that effect's late landing (money counted twice, a receipt saying "returned" for a send that never
// landed), whether a re-read of that effect or a customer.updated finds it.
import { describe, expect, it } from 'vitest';
import { createFacts, stripeSide, type FactsApplier, type StripeReader } from '../../src/interlock.js';
import { sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

/**
 * C1 commits a $10 balance credit T1; C2 ($10 for another incident on the same customer) is sent and refused. The
 * facts applier returned reads Stripe as it is once someone relabelled T1's metadata with C2's id (the sandbox has no
 * update for balance transactions, so the reader shows the edit).
 */
async function relabelled(name: string): Promise<{ customer: string; c1: string; c2: string; t1: string; facts: FactsApplier }> {
  const customer = await rig.stripe.customers.create({ name: `Subscriber (${name})` });
  const c1 = await rig.commit({ kind: 'credit', customer: customer.id, amount: 1_000, incident: `INC-A-${name}` });
  const t1 = (await rig.receipt(c1)).evidence as string;
  await rig.sandbox.control.failNext({ path: `/v1/customers/${customer.id}/balance_transactions`, method: 'POST', status: 400, code: 'parameter_invalid_integer', message: 'Invalid integer.' });
  const c2 = await rig.submit({ kind: 'credit', customer: customer.id, amount: 1_000, incident: `INC-B-${name}` });
  expect(await rig.effects.waitFor(c2, 15_000)).toMatchObject({ outcome: 'REFUSED:target_error' });
  await rig.sandbox.control.idle();
  await rig.drained();
  const real = stripeSide(rig.config).reader as StripeReader;
  const edited: StripeReader = { ...real, creditsOf: async (id) => (await real.creditsOf(id)).map((credit) => (credit.id === t1 ? { ...credit, effectId: c2 } : credit)) };
  return { customer: customer.id, c1, c2, t1, facts: createFacts(rig.stores, edited) };
}

async function neverLanded(customer: string, c2: string, t1: string): Promise<void> {
  const second = await rig.receipt(c2);
  const moved = (await rig.stores.approvals.subjectCap(`customer:${customer}`)).movedCents;
  expect({ happened: second.happened, lateLanding: second.lateLanding?.evidence ?? null, status: second.finalMoney.status, movedCents: moved }).toEqual({ happened: false, lateLanding: null, status: 'not_returned', movedCents: 1_000 });
  const bundle = await rig.stores.journal.receipt(c2);
  expect(bundle?.entries.some((entry) => entry.kind === 'OBSERVED' && entry.objectId === t1)).toBe(false);
}

describe('facts: a committed balance credit relabelled with the id of another dispatched credit effect', () => {
  it('is not recorded as the other effect landing late on a re-read of that effect', async () => {
    const { customer, c2, t1, facts } = await relabelled('reread');
    // The reconciler's pass over C2 (bound within its horizon).
    await facts.reread(c2);
    await neverLanded(customer, c2, t1);
  });

  it('is not recorded as the other effect landing late from customer.updated, and stays the committing effect\'s', async () => {
    const { customer, c1, c2, t1, facts } = await relabelled('event');
    await facts.applyEvent({ id: `evt_cu_${customer}`, type: 'customer.updated', data: { object: { id: customer, object: 'customer' } } });
    await neverLanded(customer, c2, t1);
    const first = await rig.receipt(c1);
    expect({ happened: first.happened, status: first.finalMoney.status }).toEqual({ happened: true, status: 'returned' });
  });
});
