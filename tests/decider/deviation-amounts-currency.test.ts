// Rule: an amount an operator reads is stated in its money's currency (src/core/money-text.ts), so a MODEL_DEVIATED
// problem states the model's ask and the limit it broke in the case's currency (the `currency` its facts name): a
// ¥6,000 ask under a ¥5,000 approval is "the model decided 6000 JPY, but approval … covers at most 5000 JPY", never
// "6000 cents". With no facts to name it, the currency is said to be unknown.
import { describe, expect, it } from 'vitest';
import { checkDecision, MODEL_DEVIATED } from '../../src/decider/decider.js';
import type { DecisionCase } from '../../src/decider/case.js';
import { PAYMENT, refundCase } from './cases.js';

const refund = (amountCents: number) => ({ action: 'refund' as const, amountCents, reason: 'r', model: 'm', text: 't' });

/** A refund case on a payment in `currency`, under a cap of 5000, with `approval` and `payment` over the defaults. */
function caseIn(currency: string, approval: Partial<DecisionCase['approval']> = {}, payment: Record<string, unknown> = {}): DecisionCase {
  const base = refundCase();
  return refundCase({ approval: { ...base.approval, capCents: 5_000, ...approval }, facts: { get_payment: { ...base.facts.get_payment, currency, ...payment } } });
}

function problemsOf(input: DecisionCase, amount: number, facts: DecisionCase | null = input): string[] {
  const check = checkDecision(refund(amount), input.approval, 'refund', facts);
  if (check.verdict !== MODEL_DEVIATED) throw new Error(`expected MODEL_DEVIATED, got ${check.verdict}`);
  return check.problems;
}

describe('a deviation states its amounts in the case\'s currency', () => {
  it('an ask over the cap of a yen case reads in JPY', () => {
    expect(problemsOf(caseIn('jpy'), 6_000)).toEqual(['the model decided 6000 JPY, but approval ap_case_4471 covers at most 5000 JPY']);
  });

  it('an ask over the cap of a dollar case reads in dollars', () => {
    expect(problemsOf(caseIn('usd'), 6_000)).toEqual(['the model decided $60.00, but approval ap_case_4471 covers at most $50.00']);
  });

  it('an ask over what was left, or over what is refundable, reads in JPY too', () => {
    expect(problemsOf(caseIn('jpy', { centsLeft: 2_000 }), 3_000)).toEqual(["the model decided 3000 JPY, but it was told only 2000 JPY of approval ap_case_4471's 5000 JPY were left"]);
    expect(problemsOf(caseIn('jpy', {}, { refundable: 1_000 }), 3_000)).toEqual([`the model decided 3000 JPY, but the facts it was given say only 1000 JPY of payment ${PAYMENT} are still refundable (refundable)`]);
  });

  it('an amount that is not a whole number is not called cents in a yen case', () => {
    expect(problemsOf(caseIn('jpy'), 20.5)).toEqual(['the model decided 20.5, which is not a positive whole number of the smallest unit of JPY']);
  });

  it('judged without the facts, the currency is unknown, never cents or dollars', () => {
    const [problem] = problemsOf(caseIn('jpy'), 6_000, null);
    expect(problem).toBe('the model decided 6000 (minor units, currency unknown), but approval ap_case_4471 covers at most 5000 (minor units, currency unknown)');
  });
});
