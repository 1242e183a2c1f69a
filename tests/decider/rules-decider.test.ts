// Without ANTHROPIC_API_KEY the rules decider decides: the approved amount on the case's own kind, the same
// answer every time, no network, unless the facts read for the case show the money went back already (a person
// refunded the payment, a chargeback, the incident compensated): then it declines, naming the fact. Its decisions go
// through the same check and proposal fields as a model's.
import { describe, expect, it } from 'vitest';
import { parseProposal } from '../../src/core/proposal.js';
import { MAX_AMOUNT_CENTS } from '../../src/core/effects.js';
import { checkDecision, createDecider, decideByRules, loadDeciderConfig, proposalFields, RULES_MODEL } from '../../src/decider/decider.js';
import { creditCase, CUSTOMER, PAYMENT, refundCase } from './cases.js';
import { messagesServerSuite } from './messages-server.js';

const server = messagesServerSuite();

describe('the rules decider', () => {
  it('is what createDecider builds without a key, and it asks no model even with a base URL set', async () => {
    const decider = createDecider(loadDeciderConfig({ ANTHROPIC_BASE_URL: server.url }));
    expect(decider.name).toBe('rules');
    await decider.decide(refundCase());
    expect(server.received).toEqual([]);
  });

  it('refunds the approved amount, named rules in the decision that goes into the receipt', async () => {
    const input = refundCase();
    const decision = await createDecider(loadDeciderConfig({})).decide(input);
    expect(decision).toMatchObject({ action: 'refund', amountCents: 2000, model: RULES_MODEL });
    expect(RULES_MODEL).toBe('rules');
    const check = checkDecision(decision, input.approval, input.kind, null);
    if (check.verdict !== 'accepted') throw new Error(check.verdict);
    const fields = proposalFields(check, input);
    expect(fields).toMatchObject({ requestId: 'case:case-4471', approval: 'ap_case_4471', effect: { kind: 'refund', paymentIntent: PAYMENT, amount: 2000 }, decision: { model: 'rules' } });
    expect(() => parseProposal({ ...fields, agent: 'support-decider', premises: { chargebacks: [], refunded_by_others: 0 } })).not.toThrow();
  });

  it('under an approval whose cap covers more than one effect may move, decides at most what one effect may move', async () => {
    const input = refundCase({ approval: { id: 'ap_big_policy', capCents: 150_000_000, scope: `payment:${PAYMENT}`, approver: 'finance-policy' } });
    const decision = await createDecider(loadDeciderConfig({})).decide(input);
    expect(decision).toMatchObject({ action: 'refund', amountCents: MAX_AMOUNT_CENTS });
    expect(checkDecision(decision, input.approval, input.kind, null).verdict).toBe('accepted');
  });

  it('writes the amount in the currency the facts name, never dollars: a jpy credit\'s description (the customer reads it) says JPY', () => {
    const yen = decideByRules(creditCase({ facts: { get_account: { customer: CUSTOMER, subscription_status: 'active', incident_compensation: 0, currency: 'jpy' } } }));
    expect(yen).toMatchObject({ action: 'credit', description: 'Goodwill credit of 1000 JPY for incident INC-0efaf1 (case case-34ef553a02).' });
    const refund = decideByRules(refundCase({ facts: { get_payment: { chargebacks: [], currency: 'eur' } } }));
    expect(refund.action === 'refund' ? refund.reason : '').toContain('Goodwill refund of 20.00 EUR');
    // Facts that name no currency: the customer's line leaves the amount out rather than guess one.
    const unnamed = decideByRules(creditCase({ facts: { get_account: { customer: CUSTOMER } } }));
    expect(unnamed).toMatchObject({ action: 'credit', description: 'Goodwill credit for incident INC-0efaf1 (case case-34ef553a02).' });
  });

  it('credits the approved amount for the case incident', async () => {
    const input = creditCase();
    const decision = await createDecider(loadDeciderConfig({})).decide(input);
    expect(decision).toMatchObject({ action: 'credit', amountCents: 1000, model: 'rules', description: 'Goodwill credit of $10.00 for incident INC-0efaf1 (case case-34ef553a02).' });
    const check = checkDecision(decision, input.approval, input.kind, null);
    if (check.verdict !== 'accepted') throw new Error(check.verdict);
    expect(proposalFields(check, input).effect).toMatchObject({ kind: 'credit', customer: CUSTOMER, amount: 1000, incident: 'INC-0efaf1' });
  });

  it('is deterministic: the same case gets the same decision, whatever facts that stop no money say (but the currency its text names)', async () => {
    const decider = createDecider(loadDeciderConfig({}));
    const first = await decider.decide(refundCase());
    expect(await decider.decide(refundCase())).toEqual(first);
    // An open inquiry is not a chargeback; facts not read (null) show nothing.
    expect(await decider.decide(refundCase({ facts: { get_payment: { chargebacks: [], refunded_by_others: null, open_inquiry: 'du_2', currency: 'usd' } } }))).toEqual(first);
  });

  it('declines a refund of a payment a person already refunded, naming the fact, that this case used nothing of the approval, and how to refund by hand under one that covers it (the decider does not know whether the case approval still can)', async () => {
    const input = refundCase({ facts: { get_payment: { payment_intent: PAYMENT, chargebacks: [], refunded_by_others: 2000, refundable: 8000, currency: 'usd' } } });
    const decision = await createDecider(loadDeciderConfig({})).decide(input);
    expect(decision).toMatchObject({ action: 'decline', model: RULES_MODEL });
    expect(checkDecision(decision, input.approval, input.kind, null).verdict).toBe('declined');
    expect(decision.text).toBe(
      `rules: declined on the facts. Payment ${PAYMENT} was refunded $20.00 already, outside this case (refunded_by_others in the facts read at Stripe), so no refund was proposed for case case-4471. Nothing was sent, and this case used nothing of approval ap_case_4471: if the customer is still owed money, a person sends it with POST /v1/refunds (npx interlock refund) under an approval that covers it (ap_case_4471, if it has a use and room left: npx interlock approvals describe ap_case_4471).`,
    );
  });

  it('declines a refund of a payment with a chargeback, naming it', () => {
    const decision = decideByRules(refundCase({ facts: { get_payment: { chargebacks: ['du_1'], refunded_by_others: 0, currency: 'usd' } } }));
    expect(decision).toMatchObject({ action: 'decline' });
    expect(decision.text).toContain(`Payment ${PAYMENT} has chargebacks (du_1)`);
  });

  it('declines a credit for an incident already compensated, naming the amount and the incident', () => {
    const decision = decideByRules(creditCase({ facts: { get_account: { customer: CUSTOMER, subscription_status: 'active', incident_compensation: 500, currency: 'usd' } } }));
    expect(decision).toMatchObject({ action: 'decline', model: 'rules' });
    expect(decision.text).toContain(`Customer ${CUSTOMER} was given $5.00 for incident INC-0efaf1 already (incident_compensation in the facts read at Stripe), so no credit was proposed`);
    // Interlock credits an incident once: what is still owed goes by hand in the Dashboard, not through POST /v1/credits.
    expect(decision.text).toContain('Interlock credits an incident once, so a credit for incident INC-0efaf1 is refused before the send (incident_already_compensated)');
    expect(decision.text).toContain('a person credits the remainder by hand in the Stripe Dashboard');
  });

  it('refuses a case that could not become a proposal, before deciding anything', async () => {
    const decider = createDecider(loadDeciderConfig({}));
    await expect(decider.decide(refundCase({ approval: { id: 'ap_1', capCents: 2000, scope: `customer:${CUSTOMER}` } }))).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringContaining('approval.scope: names a customer, so it cannot approve a refund') });
    await expect(decider.decide(creditCase({ incident: undefined }))).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringContaining('incident: a credit names the incident it compensates') });
  });
});
