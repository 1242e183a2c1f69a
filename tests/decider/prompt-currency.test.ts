// Rule: the model is told amounts in the case's own currency, never as dollars: the decision tool's amount is in the
// smallest unit of the payment's (or the credit's) currency as the facts name it, and the approval's cap is written as
// money in it. A jpy payment's cap of 2000 is 2000 JPY, not $20.00.
import { describe, expect, it } from 'vitest';
import { casePromptFor, systemPromptFor, toolsFor } from '../../src/decider/decider.js';
import { creditCase, CUSTOMER, PAYMENT, refundCase } from './cases.js';

const yenRefund = refundCase({ facts: { get_payment: { payment_intent: PAYMENT, chargebacks: [], refunded_by_others: 0, currency: 'jpy' } } });
const schemaOf = (input: Parameters<typeof toolsFor>[0], name: string) => JSON.stringify(toolsFor(input).find((tool) => tool.name === name)?.input_schema);

describe('amounts as the model reads them', () => {
  it('a jpy refund: the tool and the case prompt say JPY, no dollar sign', () => {
    const schema = schemaOf(yenRefund, 'issue_refund');
    expect(schema).toContain('the smallest unit of JPY');
    expect(schema).toContain('2000 is 2000 JPY');
    expect(schema).not.toContain('$');
    expect(casePromptFor(yenRefund)).toContain('at most 2000 JPY (2000 in JPY minor units)');
  });

  it('a usd credit: the tool says cents as dollars', () => {
    expect(schemaOf(creditCase(), 'issue_credit')).toContain('2000 is $20.00');
    expect(casePromptFor(creditCase())).toContain('at most $10.00 (1000 in USD minor units)');
  });

  it('facts that name no currency: the unit is named, the currency is said to be unknown, never dollars', () => {
    const unnamed = creditCase({ facts: { get_account: { customer: CUSTOMER } } });
    expect(schemaOf(unnamed, 'issue_credit')).toContain('which the facts do not name');
    expect(casePromptFor(unnamed).split('\n')[1]).toBe("Approval approval-case-34ef553a02 by support-lead: one account credit of at most 1000 in the smallest unit of the currency the customer's credits are given in, which the facts do not name.");
    expect(systemPromptFor('refund')).not.toMatch(/in (integer )?cents/);
  });
});
