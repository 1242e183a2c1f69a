// A refund that lands after its effect was refused (issue 10 §2): a process that froze, woke up and sent anyway
// leaves a refund at Stripe carrying the effect's id. The facts worker records it, marks the landing on the
// receipt (LATE_RESULT) so the effect counts as having moved money, and raises a late-landing alert.
// Each effect here is refused with a landing still possible: its first send's answer was lost and recovery's resend
// was refused (refusedAfterLostAnswer). One whose only send was refused leaves nothing at Stripe, and a refund labelled
// with its id is no landing (refused-leaving-nothing.test.ts).
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { StripeEvent } from '../../src/interlock.js';
import { approvalTerms } from '../support/harness.js';
import { pay, refusedAfterLostAnswer, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

describe('a late landing', () => {
  it('a refund with the id of a refused effect is recorded, flagged as a late landing, and alerted once', async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 2_000 });
    await rig.stores.approvals.grant(terms);
    // Dispatched, its send's answer lost, and Stripe answered the resend a definite no: the journal settles it without a
    // landing, though the first request may still land. (One refused before any send cannot land:
    // never-sent-landing.test.ts.)
    await refusedAfterLostAnswer(rig, '/v1/refunds', { status: 402, code: 'card_declined', message: 'Your card was declined.' });
    const proposal = { requestId: `case-${randomBytes(4).toString('hex')}`, agent: 'support-bot', approval: terms.id, premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer' } };
    const recorded = await rig.effects.propose(proposal);
    expect(await rig.effects.waitFor(recorded.effectId, 30_000)).toMatchObject({ outcome: 'REFUSED:target_error' });
    expect((await rig.receipt(recorded.effectId)).finalMoney.status).toBe('not_returned');

    // The request whose answer was lost reaches Stripe after all.
    const refund = await rig.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { interlock_effect_id: recorded.effectId } });
    const verification = await rig.until(recorded.effectId, (v) => v.lateLanding !== null);
    expect(verification.lateLanding).toMatchObject({ evidence: refund.id });
    expect(verification.valid).toBe(true);
    await rig.sandbox.control.idle();
    await rig.drained();
    const entries = (await rig.stores.journal.receipt(recorded.effectId))?.entries.map((entry) => entry.kind) ?? [];
    expect(entries.filter((kind) => kind === 'LATE_RESULT')).toHaveLength(1);
    const alerts = (await rig.stores.alerts.list()).filter((alert) => alert.effectId === recorded.effectId);
    expect(alerts.map((alert) => alert.kind)).toEqual(['late_landing']);
    expect(alerts[0]).toMatchObject({ refund: refund.id, centsAtStake: 2_000 });
    expect(rig.warnings.some((line) => line.effectId === recorded.effectId && String(line.msg).includes('landed for an effect the journal had settled without it'))).toBe(true);
  }, 60_000);

  it("a chargeback whose event was applied before the late refund's own: the landing reads the payment's disputes at once, so the receipt has both", async () => {
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 2_000 });
    await rig.stores.approvals.grant(terms);
    await refusedAfterLostAnswer(rig, '/v1/refunds', { status: 402, code: 'card_declined', message: 'Your card was declined.' });
    const proposal = { requestId: `case-${randomBytes(4).toString('hex')}`, agent: 'support-bot', approval: terms.id, premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer' } };
    const recorded = await rig.effects.propose(proposal);
    expect(await rig.effects.waitFor(recorded.effectId, 30_000)).toMatchObject({ outcome: 'REFUSED:target_error' });
    // The events are applied here, in the order a second facts worker could take them: the chargeback first.
    await rig.stopFactsWorker();
    try {
      const refund = await rig.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { interlock_effect_id: recorded.effectId } });
      const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
      await rig.sandbox.control.idle();
      const eventOf = async (type: string, id: string) => {
        const found = (await rig.stripe.events.list({ type, limit: 100 })).data.find((event) => (event.data.object as { id?: string }).id === id);
        if (found === undefined) throw new Error(`no ${type} for ${id}`);
        return JSON.parse(JSON.stringify(found)) as StripeEvent;
      };
      expect(await rig.facts.applyEvent(await eventOf('charge.dispute.created', dispute.id))).toEqual([]);
      await rig.facts.applyEvent(await eventOf('refund.created', refund.id));
      const verification = await rig.receipt(recorded.effectId);
      expect(verification.lateLanding).toMatchObject({ evidence: refund.id });
      expect(verification.finalMoney.disputes.map((one) => one.id)).toEqual([dispute.id]);
    } finally {
      rig.startFactsWorker();
    }
  }, 60_000);

  it('a balance credit with the id of a credit effect settled without a landing is recorded from customer.updated, and flagged', async () => {
    const customer = await rig.stripe.customers.create({ name: 'Subscriber' });
    const terms = approvalTerms({ scope: `customer:${customer.id}`, capCents: 1_000 });
    await rig.stores.approvals.grant(terms);
    // Dispatched, its send's answer lost, and Stripe answered the resend a definite no: the journal settles it without a
    // landing, though the first request may still land.
    await refusedAfterLostAnswer(rig, `/v1/customers/${customer.id}/balance_transactions`, { status: 400, code: 'parameter_invalid_integer', message: 'Invalid integer.' });
    const proposal = { requestId: `case-${randomBytes(4).toString('hex')}`, agent: 'support-bot', approval: terms.id, premises: { subscription_status: null, incident_compensation: 0 }, effect: { kind: 'credit', customer: customer.id, amount: 1_000, incident: 'INC-late' } };
    const recorded = await rig.effects.propose(proposal);
    expect(await rig.effects.waitFor(recorded.effectId, 30_000)).toMatchObject({ outcome: 'REFUSED:target_error' });

    // The request whose answer was lost reaches Stripe after all, a credit carrying the effect's id; Stripe announces
    // it only as customer.updated.
    const credit = await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: -1_000, currency: 'usd', metadata: { interlock_effect_id: recorded.effectId, interlock_incident: 'INC-late' } });
    const verification = await rig.until(recorded.effectId, (v) => v.lateLanding !== null);
    expect(verification.lateLanding).toMatchObject({ evidence: credit.id });
    expect(verification).toMatchObject({ valid: true, happened: true, finalMoney: { status: 'returned' } });
    await rig.sandbox.control.idle();
    await rig.drained();
    const alerts = (await rig.stores.alerts.list()).filter((alert) => alert.effectId === recorded.effectId);
    expect(alerts.map((alert) => alert.kind)).toEqual(['late_landing']);
    // The money at stake is the credit's, as a refund's is.
    expect(alerts[0]).toMatchObject({ refund: credit.id, centsAtStake: 1_000 });
  }, 60_000);
});
