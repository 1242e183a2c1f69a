// The seeds' two cases as the decider receives them: the $20 goodwill refund on a $100 payment with an open bank
// inquiry (stripe_dispute), and the $10 goodwill credit for an incident (billing_credit). Facts are what the
// callers read from Stripe for get_payment and get_account, the `currency` premise included.
import type { DecisionCase } from '../../src/decider/decider.js';

export const PAYMENT = 'pi_3UFLig88KhIqqdFL0kVeW9XO';
export const CUSTOMER = 'cus_VFrlBdc4GY9vq1';

export function refundCase(overrides: Partial<DecisionCase> = {}): DecisionCase {
  return {
    caseId: 'case-4471',
    kind: 'refund',
    story:
      'Support case #4471. The customer paid $100 for a blender that arrived with a cracked jar. They also contacted their bank, which opened an inquiry on the payment; it is an inquiry, not a chargeback. Support approved a $20.00 goodwill partial refund, and the customer keeps the blender.',
    approval: { id: 'ap_case_4471', capCents: 2000, scope: `payment:${PAYMENT}`, approver: 'support-lead' },
    facts: { get_payment: { payment_intent: PAYMENT, amount_cents: 10000, chargebacks: [], refunded_by_others: 0, open_inquiry: 'du_1UFLih88KhIqqdFLx0Q2bW1e', currency: 'usd' } },
    ...overrides,
  };
}

export function creditCase(overrides: Partial<DecisionCase> = {}): DecisionCase {
  return {
    caseId: 'case-34ef553a02',
    kind: 'credit',
    story:
      'The customer is on the $30/month plan and lost access for three days during incident INC-0efaf1. Support approved ONE $10.00 credit to the account balance, to be applied against the next invoice.',
    approval: { id: 'approval-case-34ef553a02', capCents: 1000, scope: `customer:${CUSTOMER}`, approver: 'support-lead' },
    incident: 'INC-0efaf1',
    facts: { get_account: { customer: CUSTOMER, plan_cents_per_month: 3000, subscription_status: 'active', incident_compensation: 0, currency: 'usd' } },
    ...overrides,
  };
}
