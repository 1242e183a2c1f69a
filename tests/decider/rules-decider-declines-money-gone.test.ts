// Rule: a case's money is decided on the facts read for it, by the rules decider (no ANTHROPIC_API_KEY) as by the
// model: when those facts show a person already refunded the payment (refunded_by_others > 0) or the incident was
// already compensated (incident_compensation > 0), no second refund or credit is proposed; the case is declined,
// naming the fact. The gate only checks that the facts did not change since the decision, so a refund decided on a
// payment already refunded would go out twice (the rule in tests/decider/blind-decision.test.ts for the model).
import { describe, expect, it } from 'vitest';
import { caseEffectId } from '../../queues/decisions.js';
import { casesSuite } from '../support/cases-rig.js';
import { uid } from '../http/rig.js';

const { rig } = casesSuite();

describe('the rules decider on money that went back already', () => {
  it('does not refund the approved $20 a second time on a payment a person refunded by hand: the case is declined, naming the fact', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    // A person handled the complaint by hand at Stripe (the dashboard) before the case was decided.
    await rig.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, reason: 'requested_by_customer' });
    const caseId = `case-${uid()}`;
    await rig.decisions.submit({ caseId, kind: 'refund', subject: paymentIntent, incident: null, story: 'The jar arrived cracked; support approved a $20 goodwill refund.', approval, agent: 'support-bot' }, 'sam');
    const record = await rig.decisions.waitFor(caseId, 15_000);
    expect(record?.status).toMatchObject({ state: 'declined', effectId: null, error: null, decision: { model: 'rules', action: 'decline', amountCents: null } });
    expect(record?.status.decision?.text).toContain(`Payment ${paymentIntent} was refunded $20.00 already, outside this case (refunded_by_others in the facts read at Stripe)`);
    expect(await rig.stores.journal.partitionOf(caseEffectId(caseId))).toBeNull();
    expect((await rig.refundsAt(paymentIntent)).map((refund) => refund.amount)).toEqual([2_000]);
  });

  it('does not credit an incident billing already compensated: the case is declined, naming the fact', async () => {
    const customer = await rig.stripe.customers.create({ name: 'Subscriber' });
    // Billing's SLA automation credited the incident already.
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'usd', metadata: { incident: 'INC-0efaf1' } });
    const approval = `ap_${uid()}`;
    await rig.stores.approvals.grant({ id: approval, approver: 'support-lead', capCents: 1_000, scope: `customer:${customer.id}`, expiresAt: Date.now() + 3_600_000, maxUses: 1 });
    const caseId = `case-${uid()}`;
    await rig.decisions.submit({ caseId, kind: 'credit', subject: customer.id, incident: 'INC-0efaf1', story: 'Three days without access during the outage; support approved one $10 credit.', approval, agent: 'support-bot' }, 'sam');
    const record = await rig.decisions.waitFor(caseId, 15_000);
    expect(record?.status).toMatchObject({ state: 'declined', effectId: null, decision: { model: 'rules', action: 'decline' } });
    expect(record?.status.decision?.text).toContain(`Customer ${customer.id} was given $5.00 for incident INC-0efaf1 already`);
    expect((await rig.stripe.customers.listBalanceTransactions(customer.id)).data.map((credit) => credit.amount)).toEqual([-500]);
  });
});
