// Rule (facts/apply.ts applyCredits; core/final-money.ts BALANCE_UNREAD; core/alert-rules.ts): when a move of a credit's
// customer balance can no longer be read at Stripe because the customer was deleted first, the final money claims no
// answer the facts cannot support: it reads `unknown` (`balance_unread`), never `returned`, and a `failed_after_landed`
// alert asks a person, whatever order the take-back's `customer.updated` and the `customer.deleted` are applied in.
// Applied live the take-back is read and the credit reads `not_returned`. The `customer.updated` event carries the
// customer, not the balance transaction that moved it, so it cannot tell a take-back from an invoice using the credit:
// the event's payload is no fallback here. Readings that stand without the move stay: a credit taken back in full by
// debits that were read, or still unused in the balance at the deletion, is `not_returned` whatever else moved.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BALANCE_UNREAD, deriveFinalMoney, type MoneyFacts } from '../../src/core/final-money.js';
import type { StripeEvent } from '../../src/interlock.js';
import { answerOf, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

/** A $10 credit, a debit labelled with it taking it all back, then its customer deleted; applied as `order` says. */
async function takenBackThenDeleted(order: 'live' | 'in order' | 'deletion first') {
  const customer = await rig.stripe.customers.create({ name: `unread-${randomBytes(3).toString('hex')}` });
  const incident = `INC-${randomBytes(3).toString('hex')}`;
  const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 1_000, incident });
  await settled();
  if (order !== 'live') await rig.stopFactsWorker();
  await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 1_000, currency: 'usd', description: 'take back', metadata: { interlock_effect_id: effectId, interlock_incident: incident } });
  await rig.sandbox.control.idle();
  if (order === 'live') await rig.drained();
  await rig.stripe.customers.del(customer.id);
  await rig.sandbox.control.idle();
  if (order !== 'live') {
    // The queued events, applied now as a worker that comes back would (or one that takes the deletion first).
    const jobs = await rig.factsQueue.queue.getJobs(['waiting', 'prioritized', 'delayed']);
    const mine = jobs.map((job) => job.data as StripeEvent).filter((event) => event.data.object.id === customer.id || event.data.object.customer === customer.id);
    const sorted = [...mine].sort((a, b) => (a.created ?? 0) - (b.created ?? 0));
    const applied = order === 'in order' ? sorted : [...sorted.filter((event) => event.type === 'customer.deleted'), ...sorted.filter((event) => event.type !== 'customer.deleted')];
    expect(applied.map((event) => event.type)).toContain('customer.updated');
    for (const event of applied) await rig.facts.applyEvent(event);
    await rig.factsQueue.queue.drain(true);
    rig.startFactsWorker();
  }
  await settled();
  const verification = await rig.receipt(effectId);
  const alerts = (await rig.stores.alerts.list()).filter((alert) => alert.effectId === effectId).map((alert) => ({ kind: alert.kind, open: alert.resolvedAt === null, cents: alert.centsAtStake }));
  const unread = (await rig.observed(effectId)).filter((fact) => fact.status === BALANCE_UNREAD);
  return { answer: answerOf(verification), balanceUnread: verification.finalMoney.balanceUnread ?? null, alerts, unread };
}

describe('a credit whose customer was deleted before a move of its balance was read', () => {
  it('reads not_returned when the take-back is read before the deletion', async () => {
    const live = await takenBackThenDeleted('live');
    expect(live.answer).toMatchObject({ status: 'not_returned', answerMatchesFinalMoney: false });
    expect(live.alerts).toEqual([]);
    expect(live.unread).toEqual([]);
  });

  it('reads unknown, never returned, and asks a person when the take-back is applied after the deletion, in either order', async () => {
    for (const order of ['in order', 'deletion first'] as const) {
      const late = await takenBackThenDeleted(order);
      expect({ order, status: late.answer.status, failureReason: late.answer.failureReason, matches: late.answer.answerMatchesFinalMoney }).toEqual({ order, status: 'unknown', failureReason: BALANCE_UNREAD, matches: null });
      expect(late.balanceUnread).toMatchObject({ cents: 1_000, currency: 'usd' });
      expect(late.alerts).toEqual([{ kind: 'failed_after_landed', open: true, cents: 1_000 }]);
      expect(late.unread).toEqual([expect.objectContaining({ eventType: 'customer.updated' })]);
    }
  });

  it('keeps the readings that stand without the unread move', () => {
    const facts = (more: Partial<MoneyFacts>): MoneyFacts => ({
      refunds: new Map(),
      disputes: new Map(),
      credits: new Set(['cbtxn_own']),
      creditNotes: new Map(),
      otherCredits: new Map(),
      reversals: new Map(),
      reCredits: new Map(),
      currencies: new Map([['cbtxn_own', { currency: 'usd', customerCurrency: 'usd' }]]),
      unread: { credit: 'cbtxn_own', event: 'evt_1' },
      ...more,
    });
    expect(deriveFinalMoney(facts({}), true, 'credit', [], 1_000)).toMatchObject({ status: 'unknown', failureReason: BALANCE_UNREAD, balanceUnread: { credit: 'cbtxn_own', event: 'evt_1', cents: 1_000, currency: 'usd' } });
    // Used off a bill, as the deletion's smaller balance alone would read: not claimed once a move went unread.
    expect(deriveFinalMoney(facts({ deletion: { credit: 'cbtxn_own', balance: 0, currency: 'usd' } }), true, 'credit', [], 1_000).status).toBe('unknown');
    // Taken back in full by debits that were read: not the customer's money, whatever else moved.
    expect(deriveFinalMoney(facts({ reversals: new Map([['cbtxn_back', { cents: 1_000, currency: 'usd' }]]) }), true, 'credit', [], 1_000).status).toBe('not_returned');
    // Still whole in the balance when the customer was deleted: lost with it, whatever else moved.
    expect(deriveFinalMoney(facts({ deletion: { credit: 'cbtxn_own', balance: -1_000, currency: 'usd' } }), true, 'credit', [], 1_000)).toMatchObject({ status: 'not_returned', failureReason: 'customer_deleted' });
  });
});

// Rule (facts/apply.ts applyCredits): a `customer.updated` whose previous_attributes name no `balance` moved no balance,
// so applied after the customer's deletion it records no unread move: a credit the customer used (read live) stays
// `returned`, and no alert asks a person about a move that never was.
describe('a customer.updated that moved no balance, applied after its customer was deleted', () => {
  it('leaves a used credit returned, with no unread fact and no alert', async () => {
    const customer = await rig.stripe.customers.create({ name: `unmoved-${randomBytes(3).toString('hex')}` });
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 1_000, incident: `INC-${randomBytes(3).toString('hex')}` });
    await settled();
    // Used off a bill (a debit no effect labels), read live.
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 1_000, currency: 'usd', description: 'invoice' });
    await settled();
    await rig.stopFactsWorker();
    await rig.stripe.customers.update(customer.id, { email: `moved-nothing-${randomBytes(3).toString('hex')}@example.com` });
    await rig.stripe.customers.del(customer.id);
    await rig.sandbox.control.idle();
    const jobs = await rig.factsQueue.queue.getJobs(['waiting', 'prioritized', 'delayed']);
    const mine = jobs.map((job) => job.data as StripeEvent).filter((event) => event.data.object.id === customer.id);
    const update = mine.find((event) => event.type === 'customer.updated');
    expect(update?.data.previous_attributes).toBeDefined();
    expect(update?.data.previous_attributes).not.toHaveProperty('balance');
    for (const event of [...mine].sort((a, b) => (a.created ?? 0) - (b.created ?? 0))) await rig.facts.applyEvent(event);
    await rig.factsQueue.queue.drain(true);
    rig.startFactsWorker();
    await settled();
    const verification = await rig.receipt(effectId);
    expect(answerOf(verification).status).toBe('returned');
    expect((await rig.observed(effectId)).filter((fact) => fact.status === BALANCE_UNREAD)).toEqual([]);
    expect((await rig.stores.alerts.list()).filter((alert) => alert.effectId === effectId)).toEqual([]);
  });
});
