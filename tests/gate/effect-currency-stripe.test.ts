// Rule: the alerts and inbox items about an effect that never landed state its money in the effect's own currency,
// which the proposal's premises record as the API, the decider and the CLI read them (REFUND_FACTS: the
// PaymentIntent's `currency`; CREDIT_FACTS: the credit target's, INTERLOCK_CREDIT_CURRENCY): a ¥5000 refund Stripe
// keeps answering 500 to raises send_unanswered for "5000 JPY", not "$50.00"; a ¥5000 credit refused on a stale
// premise opens a stale_premise item of 5000 JPY; a model's deviation on a credit proposed without the premise opens
// its item in the configured credit currency. Against the Stripe sandbox, through the gate, the queue and recovery.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CREDIT_FACTS, REFUND_FACTS, effectIdFor, moneyText, openInboxItem, type Alert, type InboxItem } from '../../src/interlock.js';
import { approvalTerms, sleep } from '../support/harness.js';
import { sharedFactsRig, waitFor } from '../facts/facts-rig.js';

const rig = sharedFactsRig({ config: { creditCurrency: 'jpy', unansweredAlertMs: 300 } });

const itemOf = (id: string): Promise<InboxItem> => waitFor(`inbox item ${id}`, () => rig.stores.inbox.get(id), 5_000);

describe('money in the effect\'s own currency, before anything landed', () => {
  it('a jpy refund Stripe gives no answer to raises send_unanswered for 5000 JPY', async () => {
    const intent = await rig.stripe.paymentIntents.create({ amount: 10_000, currency: 'jpy', payment_method: 'pm_card_visa', confirm: true });
    const terms = approvalTerms({ scope: `payment:${intent.id}`, capCents: 5_000 });
    await rig.stores.approvals.grant(terms);
    const effect = { kind: 'refund' as const, paymentIntent: intent.id, amount: 5_000, reason: 'requested_by_customer' as const };
    const requestId = `case-${randomBytes(4).toString('hex')}`;
    const premises = await rig.target.readFacts(effectIdFor({ requestId, effect }), effect, REFUND_FACTS, { timeoutMs: 5_000 });
    expect(premises['currency']).toBe('jpy');
    await rig.sandbox.control.failNext({ path: '/v1/refunds', method: 'POST', status: 500, type: 'api_error', message: 'boom', stored: true, count: 1000 });
    const recorded = await rig.effects.propose({ requestId, agent: 'support-bot', approval: terms.id, premises, effect });
    let alert: Alert | null = null;
    for (const stop = Date.now() + 20_000; Date.now() < stop && alert === null; ) {
      await rig.sender.gate.recover({ only: [recorded.effectId] }).catch(() => undefined);
      alert = await rig.stores.alerts.get(`send_unanswered:${recorded.effectId}`);
      if (alert === null) await sleep(200);
    }
    await rig.sandbox.control.idle();
    expect(alert?.currency).toBe('jpy');
    expect(moneyText(alert?.centsAtStake ?? 0, alert?.currency ?? null)).toBe('5000 JPY');
    expect(alert?.sentence).toContain('the 5000 JPY refund');
    expect(alert?.sentence).not.toContain('$');
  });

  it('a jpy credit refused on a stale premise opens a stale_premise item of 5000 JPY', async () => {
    const customer = await rig.stripe.customers.create({ name: 'Yen subscriber' });
    const terms = approvalTerms({ scope: `customer:${customer.id}`, capCents: 5_000 });
    await rig.stores.approvals.grant(terms);
    const effect = { kind: 'credit' as const, customer: customer.id, amount: 5_000, incident: 'INC-yen-stale' };
    const requestId = `case-${randomBytes(4).toString('hex')}`;
    const read = await rig.target.readFacts(effectIdFor({ requestId, effect }), effect, CREDIT_FACTS, { timeoutMs: 5_000 });
    // Decided on an active subscription the customer does not have: stale at the send.
    const recorded = await rig.effects.propose({ requestId, agent: 'support-bot', approval: terms.id, premises: { ...read, subscription_status: 'active' }, effect });
    expect(await rig.effects.waitFor(recorded.effectId, 15_000)).toMatchObject({ outcome: 'REFUSED:stale_premise' });
    const item = await itemOf(`stale_premise:${recorded.effectId}`);
    expect(item?.currency).toBe('jpy');
    expect(moneyText(item?.centsAtStake ?? 0, item?.currency ?? null)).toBe('5000 JPY');
  });

  it('a model_deviated item on a credit proposed without the currency premise is in the configured credit currency', async () => {
    const customer = await rig.stripe.customers.create({ name: 'Yen subscriber, deviated' });
    const terms = approvalTerms({ scope: `customer:${customer.id}`, capCents: 5_000 });
    await rig.stores.approvals.grant(terms);
    const recorded = await rig.effects.propose({ requestId: `case-${randomBytes(4).toString('hex')}`, agent: 'support-bot', approval: terms.id, premises: { subscription_status: 'active', incident_compensation: 0 }, effect: { kind: 'credit', customer: customer.id, amount: 5_000, incident: 'INC-yen-deviated' } });
    await rig.effects.waitFor(recorded.effectId, 15_000);
    const { item } = await openInboxItem(rig.stores, { effectId: recorded.effectId, happened: 'The model asked for 5000 where the approval allows less.', centsAtStake: 5_000 });
    expect(item.currency).toBe('jpy');
    expect(moneyText(item.centsAtStake, item.currency ?? null)).toBe('5000 JPY');
  });
});
