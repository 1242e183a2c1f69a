// Rule (facts/apply.ts applyDeletion, foldDeletion; core/final-money.ts wipedByDeletion): a credit that landed on a
// customer deleted before, during or after its commit, with the credit unused, reads `not_returned` (`customer_deleted`)
// and raises `failed_after_landed`, exactly as a credit committed before the deletion does. Here the credit's send lands
// at Stripe, the customer is deleted and its `customer.deleted` applied while the answer is still on its way, and only
// then does the credit commit: no re-read can show the balance any more (Stripe 404s a deleted customer's balance
// transactions), so the deletion kept for the customer is folded in when it commits. The balance is shared across the
// customer's credits newest first, the parts given before stand (the first deletion stands), and the parts never add up
// to more than the balance held.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Journal } from '../../src/redis/journal.js';
import { betweenLandingAndAnswer, invoiceTen, sharedFactsRig, waitFor, type RigEffect } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

const incident = () => `INC-${randomBytes(3).toString('hex')}`;

/** Commits the credit, its customer deleted (and the deletion applied) after its send landed and before it commits. */
async function commitDeletingBetween(effect: RigEffect & { kind: 'credit' }): Promise<string> {
  return betweenLandingAndAnswer(rig, async () => {
    await rig.stripe.customers.del(effect.customer);
    await settled();
  }, () => rig.commit(effect));
}

async function lostAlerts(effectIds: readonly string[]) {
  const alerts = await rig.stores.alerts.list();
  return alerts
    .filter((alert) => effectIds.includes(alert.effectId) && alert.kind === 'failed_after_landed' && alert.resolvedAt === null)
    .map((alert) => ({ effectId: alert.effectId, centsAtStake: alert.centsAtStake }))
    .sort((a, b) => a.effectId.localeCompare(b.effectId));
}

const deletionsOn = async (effectId: string) => (await rig.observed(effectId)).filter((entry) => entry.status === 'customer_deleted');

describe('a credit that commits after its customer was deleted', () => {
  it('reads not_returned (customer_deleted) and raises failed_after_landed when the deletion was applied between its send and its commit', async () => {
    const customer = await rig.stripe.customers.create({ name: 'Deleted while the credit was on its way' });
    const effectId = await commitDeletingBetween({ kind: 'credit', customer: customer.id, amount: 1_000, incident: incident() });
    const deletion = rig.applied.find(({ event }) => event.type === 'customer.deleted' && event.data.object.id === customer.id);
    expect(deletion).toBeDefined();
    // The event found no credit committed on the customer: nothing recorded by it then.
    expect(deletion?.applied.every((applied) => applied.appended === 0)).toBe(true);
    // The commit's settle saw the customer marked and re-read the credit, well inside the reconciler's interval.
    const after = await rig.until(effectId, (v) => v.finalMoney.status === 'not_returned', 8_000);
    expect(after.answer).toBe('returned');
    expect(after.finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'customer_deleted', customerDeleted: { balance: -1_000, currency: 'usd', cents: 1_000 } });
    expect(after.answerMatchesFinalMoney).toBe(false);
    await settled();
    expect(await lostAlerts([effectId])).toEqual([{ effectId, centsAtStake: 1_000 }]);

    // Recorded once: the event again, a re-read (the reconciler's), nothing more.
    if (deletion !== undefined) await rig.facts.applyEvent(deletion.event, { again: true });
    expect((await rig.facts.reread(effectId)).every((applied) => applied.appended === 0)).toBe(true);
    await settled();
    expect(await deletionsOn(effectId)).toHaveLength(1);
    expect((await deletionsOn(effectId))[0]?.eventId).toBe(deletion?.event.id);
  }, 60_000);

  it('shares the balance with a credit committed before the deletion: both unused, both lost, the parts summing to the balance', async () => {
    const customer = await rig.stripe.customers.create({ name: 'One credit committed, one on its way' });
    const older = await rig.commit({ kind: 'credit', customer: customer.id, amount: 1_000, incident: incident() });
    await settled();
    const newer = await commitDeletingBetween({ kind: 'credit', customer: customer.id, amount: 1_000, incident: incident() });
    await rig.until(newer, (v) => v.finalMoney.status === 'not_returned', 8_000);
    await settled();
    expect((await rig.receipt(older)).finalMoney).toMatchObject({ status: 'not_returned', customerDeleted: { balance: -1_000, cents: 1_000 } });
    expect((await rig.receipt(newer)).finalMoney).toMatchObject({ status: 'not_returned', customerDeleted: { balance: -1_000, cents: 1_000 } });
    expect(await lostAlerts([older, newer])).toEqual([{ effectId: older, centsAtStake: 1_000 }, { effectId: newer, centsAtStake: 1_000 }].sort((a, b) => a.effectId.localeCompare(b.effectId)));
  }, 60_000);

  it('gives the credit committed late only what the parts given before left: the first deletion stands', async () => {
    const customer = await rig.stripe.customers.create({ name: 'One credit committed, one on its way, half used' });
    const older = await rig.commit({ kind: 'credit', customer: customer.id, amount: 1_000, incident: incident() });
    await settled();
    // The newer credit lands, then a $10 invoice takes $10 of the $20 balance, then the customer is deleted.
    const newer = await betweenLandingAndAnswer(rig, async () => {
      await invoiceTen(rig, customer.id);
      await rig.stripe.customers.del(customer.id);
      await settled();
    }, () => rig.commit({ kind: 'credit', customer: customer.id, amount: 1_000, incident: incident() }));
    // The older credit, the only one committed when the deletion was applied, took the $10 left; the newer shares nothing.
    await rig.until(older, (v) => v.finalMoney.status === 'not_returned', 8_000);
    await waitFor('the deletion recorded on the newer credit', async () => ((await deletionsOn(newer)).length === 1 ? true : null), 8_000);
    await settled();
    expect(await deletionsOn(newer)).toHaveLength(1);
    expect((await rig.receipt(newer)).finalMoney).toMatchObject({ status: 'returned', failureReason: null });
    expect(await lostAlerts([older, newer])).toEqual([{ effectId: older, centsAtStake: 1_000 }]);
  }, 60_000);

  it('an AMBIGUOUS credit whose customer is deleted reads unknown, and not_returned once a landing reported late commits it', async () => {
    const customer = await rig.stripe.customers.create({ name: 'Deleted while nobody could tell' });
    let landed: Record<string, unknown> = {};
    // The credit lands, its answer is lost, and the customer is deleted before the gate looks it up: the lookup can
    // never tell again (lookup_blind), so the effect is settled AMBIGUOUS.
    const effectId = await betweenLandingAndAnswer(rig, async (result) => {
      landed = result;
      await rig.stripe.customers.del(customer.id);
      await settled();
      throw new Error('connection reset after the credit landed');
    }, async () => {
      const submitted = await rig.submit({ kind: 'credit', customer: customer.id, amount: 1_000, incident: incident() });
      expect((await rig.effects.waitFor(submitted, 20_000))?.outcome).toBe('AMBIGUOUS');
      return submitted;
    });
    await settled();
    const ambiguous = await rig.receipt(effectId);
    expect({ answer: ambiguous.answer, status: ambiguous.finalMoney.status }).toEqual({ answer: 'unknown', status: 'unknown' });
    expect(await lostAlerts([effectId])).toEqual([]);

    // The lost answer reaches the gate after all (a fenced-out sender's, late-5): the landing commits the effect, and
    // the re-read that follows it (the gate's, or the reconciler's) folds the deletion in.
    const journal = rig.stores.journal as unknown as Journal;
    const partition = `customer:${customer.id}`;
    const entries = await journal.entries(partition, effectId);
    const dispatched = entries.findLast((entry) => entry.kind === 'DISPATCHED');
    if (dispatched?.kind !== 'DISPATCHED') throw new Error('no dispatch on the chain');
    const late = await journal.late(partition, effectId, { kind: 'LATE_RESULT', owner: 'fenced-out', epoch: dispatched.epoch, outcome: 'landed', result: landed as never, error: null }, dispatched.approval);
    expect(late.effect).toBe('committed');
    await rig.facts.reread(effectId);
    await settled();
    expect((await rig.receipt(effectId)).finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'customer_deleted', customerDeleted: { balance: -1_000, cents: 1_000 } });
    expect(await lostAlerts([effectId])).toEqual([{ effectId, centsAtStake: 1_000 }]);
  }, 60_000);
});
