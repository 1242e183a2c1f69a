// The send_unanswered alert (redis/alerts.ts): an effect whose sends Stripe keeps giving no definite answer to stays
// open for up to the idempotency window, while recovery looks it up and resends under its key. People hear of it
// once it has lasted longer than INTERLOCK_UNANSWERED_ALERT_MS, and the alert goes away when the effect settles.
import { afterEach, describe, expect, it } from 'vitest';
import { createFacts, type Alert, type StripeEvent } from '../../src/interlock.js';
import { approvalTerms, refundProposal, sleep, type TestNode, type World } from '../support/harness.js';
import { PAYMENT, gateWith, gateWorld, grant, recoverUntilSettled, storedError } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

const AFTER_MS = 1_000;

/** A refund Stripe answers 500 to every time, and how long after its dispatch recovery first raised the alert. */
async function unanswered(): Promise<{ node: TestNode; effectId: string; stripe: ReturnType<typeof storedError>; alert: Alert; afterMs: number }> {
  world = await gateWorld({ config: { unansweredAlertMs: AFTER_MS } });
  const stripe = storedError(world, { landsFirst: false });
  const node = await world.node('a');
  const { id } = await grant(node);
  const sent = await node.gate.submit(refundProposal({ approval: id, amount: 2_000 }));
  expect(sent.outcome).toBe('IN_FLIGHT');
  const { effectId } = sent;
  const partition = await node.journal.partitionOf(effectId);
  const dispatched = (await node.journal.entries(partition ?? '', effectId)).find((entry) => entry.kind === 'DISPATCHED');
  if (!dispatched) throw new Error(`effect ${effectId} has no DISPATCHED entry`);
  const alertId = `send_unanswered:${effectId}`;
  for (const stopAt = Date.now() + 5_000; Date.now() < stopAt; ) {
    const report = await node.gate.recover({ only: [effectId] });
    expect(report.settled).toEqual([]);
    const alert = await node.stores.alerts.get(alertId);
    if (alert !== null) return { node, effectId, stripe, alert, afterMs: alert.raisedAt - dispatched.at };
    await sleep(50);
  }
  throw new Error(`no ${alertId} alert within 5 s`);
}

describe('an effect Stripe gives no definite answer to', () => {
  it('raises send_unanswered only once the effect has gone unanswered for longer than the setting, naming the effect, the money, the last answer and what to do', async () => {
    const { node, effectId, stripe, alert, afterMs } = await unanswered();
    expect(afterMs).toBeGreaterThan(AFTER_MS);
    expect(stripe.requests()).toBeGreaterThanOrEqual(2);
    expect(alert).toMatchObject({ kind: 'send_unanswered', effectId, subject: PAYMENT, centsAtStake: 2_000, refund: null, resolvedAt: null });
    // Proposed without its currency premise: the amount is of a currency unknown, never called dollars.
    expect(alert.sentence).toContain('2000 (minor units, currency unknown) refund on payment:pi_1');
    expect(alert.sentence).toContain('500 api_error');
    expect(alert.action).toContain("Stripe's status");
    expect(alert.action).toContain('resolves itself when the effect settles');
    expect((await node.stores.alerts.list()).map((open) => open.id)).toEqual([alert.id]);
  });

  // Rule: a person's resolution of send_unanswered stands while recovery goes on raising it about the same dispatch
  // (each raise names that dispatch's time, alerts.ts newerFailure); only a later dispatch would open it again.
  it('keeps a person\'s resolution through the passes that raise it again about the same dispatch', async () => {
    const { node, effectId, alert } = await unanswered();
    await node.stores.alerts.resolve(alert.id, 'lee (operator)');
    for (let pass = 0; pass < 3; pass += 1) {
      await sleep(60);
      const report = await node.gate.recover({ only: [effectId] });
      expect(report.settled).toEqual([]);
    }
    const after = await node.stores.alerts.get(alert.id);
    expect(after).toMatchObject({ resolvedBy: 'lee (operator)', occurredAt: alert.occurredAt });
    expect(after?.resolvedAt).not.toBeNull();
    expect(after?.updatedAt).toBeGreaterThan(alert.updatedAt);
  });

  it('resolves the alert itself when recovery settles the effect', async () => {
    const { node, effectId, stripe, alert } = await unanswered();
    stripe.answerAgain();
    const report = await recoverUntilSettled(node, effectId, 10);
    expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_BY_RETRY' })]);
    expect(world.target.landedCount(effectId)).toBe(1);
    const after = await node.stores.alerts.get(alert.id);
    expect(after?.resolvedAt).not.toBeNull();
    expect(after?.resolvedBy).toBe('recovery: the effect settled COMMITTED_BY_RETRY');
    expect(await node.stores.alerts.list()).toEqual([]);
  });

  it('facts about the effect leave the alerts the facts do not decide open: send_unanswered and not_judged', async () => {
    const { node, effectId, alert } = await unanswered();
    // The effects worker's kind, on the same effect (as queues/effects.ts raises it).
    const notJudged = await node.stores.alerts.raise({ kind: 'not_judged', effectId, subject: PAYMENT, centsAtStake: 2_000, refund: null, disputes: [], sentence: 's', action: 'a' });
    // A refund carrying the effect's id reaches the facts worker while recovery still holds the effect open.
    const event: StripeEvent = { id: 'evt_unanswered', type: 'refund.created', data: { object: { id: 're_unanswered', object: 'refund', status: 'pending', amount: 2_000, payment_intent: 'pi_1', metadata: { interlock_effect_id: effectId } } } };
    // While the dispatch is open it is not recorded as the effect's own (src/facts/apply.ts holdInFlight: it cannot be
    // told from one made by hand with the effect's id until the commit names it): the payment is marked for the settle's
    // re-read, and neither alert, which no fact decides, is resolved by it.
    const applied = await createFacts(node.stores, null, { rereadBeforeAppend: false }).applyEvent(event);
    expect(applied).toEqual([]);
    expect((await node.stores.alerts.get(alert.id))?.resolvedAt).toBeNull();
    expect((await node.stores.alerts.get(notJudged.alert.id))?.resolvedAt).toBeNull();
  });
});

describe('an effect another worker settles while recovery raises its alert', () => {
  it('leaves no send_unanswered alert open for an effect that settled between the pass and the raise', async () => {
    world = await gateWorld({ config: { unansweredAlertMs: AFTER_MS } });
    const stripe = storedError(world, { landsFirst: false });
    const a = await world.node('a');
    const b = await world.node('b');
    const { id } = await grant(a);
    const sent = await a.gate.submit(refundProposal({ approval: id, amount: 2_000 }));
    expect(sent.outcome).toBe('IN_FLIGHT');
    const { effectId } = sent;
    await sleep(AFTER_MS + 100);
    // Between a's unresolved pass (its claim released) and its raise, Stripe answers again and b's recovery settles
    // the effect: b resolves the alert before there is one to resolve.
    const alerts = a.stores.alerts;
    let settledByB = false;
    const gate = gateWith(a, {
      unanswered: {
        afterMs: AFTER_MS,
        alerts: {
          get: (alertId) => alerts.get(alertId),
          resolve: (alertId, by) => alerts.resolve(alertId, by),
          async raise(alert) {
            if (!settledByB) {
              settledByB = true;
              stripe.answerAgain();
              const report = await recoverUntilSettled(b, effectId, 10);
              expect(report.settled).toEqual([expect.objectContaining({ effectId })]);
            }
            return alerts.raise(alert);
          },
        },
      },
    });
    const report = await gate.recover({ only: [effectId] });
    expect(report.settled).toEqual([]);
    expect(settledByB).toBe(true);
    const alert = await alerts.get(`send_unanswered:${effectId}`);
    expect(alert === null || alert.resolvedAt !== null).toBe(true);
    expect(await alerts.list()).toEqual([]);
  });
});

// Rule: the alert states the money in its own currency: a balance credit goes out in INTERLOCK_CREDIT_CURRENCY, so a
// 1000 JPY credit Stripe gives no answer to reads "1000 JPY", not "$10.00".
describe('send_unanswered for a balance credit in a zero-decimal currency', () => {
  it('names the credit in its own currency', async () => {
    world = await gateWorld({ config: { unansweredAlertMs: 1_000, creditCurrency: 'jpy' } });
    storedError(world, { landsFirst: false });
    const node = await world.node('a');
    const terms = approvalTerms({ scope: 'customer:cus_1', capCents: 10_000, maxUses: 10 });
    await node.approvals.grant(terms);
    const sent = await node.gate.submit({ requestId: 'ticket-jpy', agent: 'support-bot', approval: terms.id, premises: {}, effect: { kind: 'credit' as const, customer: 'cus_1', amount: 1_000, incident: 'INC-1' } });
    expect(sent.outcome).toBe('IN_FLIGHT');
    const id = `send_unanswered:${sent.effectId}`;
    let alert: Alert | null = null;
    for (const stopAt = Date.now() + 8_000; Date.now() < stopAt && alert === null; ) {
      await node.gate.recover({ only: [sent.effectId] });
      alert = await node.stores.alerts.get(id);
      if (alert === null) await sleep(50);
    }
    expect({ currency: alert?.currency, inJpy: alert?.sentence.includes('1000 JPY') }).toEqual({ currency: 'jpy', inJpy: true });
  });
});
