// Rule: a credit case's stopping facts say what a person can actually do. The credit target refuses before the send any
// credit for an incident others compensated, even in part (incident_already_compensated), and any credit in another
// currency than the customer is billed in (currency_mismatch), whether re-approved or sent by hand through Interlock;
// and a customer whose facts read null (Stripe does not know it, or deleted it) takes no credit. So the rules decider
// declines on each, naming the fact and what a person does instead (the Dashboard, by hand), and a model's credit on
// them is MODEL_DEVIATED with that advice, its message not offering to approve the amount asked for. Refunds keep their
// wording: a refund on such facts may be owed after all, and is re-approved or sent by hand through Interlock.
import { describe, expect, it } from 'vitest';
import { checkDecision, decideByRules, MODEL_DEVIATED, type Decision } from '../../src/decider/decider.js';
import type { JsonObject } from '../../src/core/json.js';
import { creditCase, CUSTOMER, PAYMENT, refundCase } from './cases.js';

const credit: Decision = { action: 'credit', amountCents: 1_000, description: 'Outage credit.', model: 'm', text: 't' };
const refund: Decision = { action: 'refund', amountCents: 2_000, reason: 'Goodwill.', model: 'm', text: 't' };
const account = (facts: JsonObject) => creditCase({ facts: { get_account: { customer: CUSTOMER, subscription_status: 'active', incident_compensation: 0, currency: 'usd', customer_currency: 'usd', ...facts } } });

function deviated(input: ReturnType<typeof creditCase>) {
  const check = checkDecision(credit, input.approval, input.kind, input);
  if (check.verdict !== MODEL_DEVIATED) throw new Error(`expected ${MODEL_DEVIATED}, got ${check.verdict}`);
  return check;
}

describe('a credit case on facts the credit target is certain to refuse', () => {
  it('an incident compensated in part: declined, the remainder by hand in the Dashboard, not through POST /v1/credits', () => {
    const decision = decideByRules(account({ incident_compensation: 500 }));
    expect(decision.action).toBe('decline');
    expect(decision.text).toContain('Interlock credits an incident once, so a credit for incident INC-0efaf1 is refused before the send (incident_already_compensated)');
    expect(decision.text).toContain('a person credits the remainder by hand in the Stripe Dashboard');
    expect(decision.text).not.toContain('a person sends it with POST /v1/credits');
    const check = deviated(account({ incident_compensation: 500 }));
    expect(check.problems.join(' ')).toContain('a person credits the remainder by hand in the Stripe Dashboard');
    expect(check.problems.join(' ')).not.toContain('re-approves it only');
    expect(check.message).toMatch(/Nothing was sent; a person must decide this case\.$/);
  });

  it('a customer billed in another currency: declined naming both currencies; a model credit is MODEL_DEVIATED', () => {
    const decision = decideByRules(account({ customer_currency: 'eur' }));
    expect(decision.action).toBe('decline');
    expect(decision.text).toContain(`Customer ${CUSTOMER} is billed in eur (customer_currency in the facts read at Stripe), and credits are given in usd`);
    expect(decision.text).toContain('a person credits it by hand in eur in the Stripe Dashboard');
    expect(deviated(account({ customer_currency: 'eur' })).problems.join(' ')).toContain('refused before the send (currency_mismatch)');
  });

  it('facts read null (a customer Stripe does not know): declined naming the customer, never read as nothing compensated', () => {
    const decision = decideByRules(account({ subscription_status: null, incident_compensation: null, customer_currency: null }));
    expect(decision.action).toBe('decline');
    expect(decision.text).toContain(`The facts of customer ${CUSTOMER} could not be read at Stripe`);
    expect(deviated(account({ incident_compensation: null })).problems.join(' ')).toContain(`could not be read at Stripe`);
  });

  it('facts without the new fact (read before it existed), or matching currencies, credit as before', () => {
    expect(decideByRules(creditCase()).action).toBe('credit');
    expect(decideByRules(account({})).action).toBe('credit');
    expect(decideByRules(account({ customer_currency: 'USD' })).action).toBe('credit');
    expect(checkDecision(credit, creditCase().approval, 'credit', creditCase()).verdict).toBe('accepted');
  });

  it('a refund on a payment refunded outside the case keeps its re-approval advice', () => {
    const input = refundCase({ facts: { get_payment: { payment_intent: PAYMENT, chargebacks: [], refunded_by_others: 500, currency: 'usd' } } });
    expect(decideByRules(input).text).toContain('a person sends it with POST /v1/refunds (npx interlock refund) under an approval that covers it');
    const check = checkDecision(refund, input.approval, input.kind, input);
    if (check.verdict !== MODEL_DEVIATED) throw new Error(check.verdict);
    expect(check.problems.join(' ')).toContain('so a person re-approves it only if the customer is still owed money');
    expect(check.message).toMatch(/or approve the amount the model asked for\.$/);
  });
});
