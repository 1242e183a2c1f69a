// Rule: a refund case's decision asks at most what the facts it was decided on say the payment may still return
// (`refundable`): the rules decider asks min(what is left of the approval, refundable) and declines, naming the fact,
// when refundable is 0; checkDecision records an ask over it as MODEL_DEVIATED (a decision outside what can be sent,
// as an ask over what is left of the approval is), and the model is told the limit. Before, the rules decider asked the
// whole approval on a $10 payment under a $20 approval and checkDecision accepted it: the target refused it before the
// send (REFUSED:target_error) with the case id spent.
import { describe, expect, it } from 'vitest';
import { checkDecision, decideByRules, MODEL_DEVIATED, RULES_MODEL, systemPromptFor } from '../../src/decider/decider.js';
import { creditCase, PAYMENT, refundCase } from './cases.js';

const withRefundable = (refundable: unknown) => {
  const base = refundCase();
  return refundCase({ facts: { get_payment: { ...base.facts.get_payment, refundable } as NonNullable<typeof base.facts.get_payment> } });
};

describe('the rules decider and `refundable`', () => {
  it('asks what is refundable when it is less than the approval left, saying so', () => {
    const decision = decideByRules(withRefundable(1_000));
    expect(decision).toMatchObject({ action: 'refund', amountCents: 1_000, model: RULES_MODEL });
    if (decision.action !== 'refund') throw new Error(decision.action);
    expect(decision.reason).toBe('Goodwill refund of $10.00 for case case-4471, all that is still refundable of the payment (refundable in the facts read at Stripe), within the $20.00 approved by support-lead under ap_case_4471.');
    expect(checkDecision(decision, withRefundable(1_000).approval, 'refund', withRefundable(1_000)).verdict).toBe('accepted');
  });

  it('asks the approval left when more is refundable, or when the facts do not say', () => {
    for (const refundable of [10_000, 2_000, null, undefined, 'lots']) expect(decideByRules(withRefundable(refundable))).toMatchObject({ action: 'refund', amountCents: 2_000 });
  });

  it('declines when nothing is refundable, naming the fact', () => {
    const decision = decideByRules(withRefundable(0));
    expect(decision).toMatchObject({ action: 'decline', model: RULES_MODEL });
    if (decision.action !== 'decline') throw new Error(decision.action);
    expect(decision.reason).toMatch(new RegExp(`^Payment ${PAYMENT} has nothing left to refund \\(refundable is \\$0\\.00 in the facts read at Stripe`));
    expect(decision.reason).toContain('Nothing was sent, and this case used nothing of approval ap_case_4471');
  });

  it('a credit case has no `refundable`: unchanged', () => {
    expect(decideByRules(creditCase())).toMatchObject({ action: 'credit', amountCents: 1_000 });
  });
});

describe('checkDecision and `refundable`', () => {
  const refund = (amountCents: number) => ({ action: 'refund' as const, amountCents, reason: 'r', model: 'm', text: 't' });

  it('MODEL_DEVIATED for an ask over what the facts it was given say is refundable, naming both', () => {
    const input = withRefundable(1_000);
    const check = checkDecision(refund(2_000), input.approval, 'refund', input);
    expect(check).toMatchObject({ verdict: MODEL_DEVIATED, problems: [`the model decided $20.00, but the facts it was given say only $10.00 of payment ${PAYMENT} are still refundable (refundable)`] });
    expect(checkDecision(refund(1_000), input.approval, 'refund', input).verdict).toBe('accepted');
  });

  it('without the facts (null) only the approval is checked', () => {
    const input = withRefundable(1_000);
    expect(checkDecision(refund(2_000), input.approval, 'refund', null).verdict).toBe('accepted');
  });

  it('the model is told the limit for a refund, not for a credit', () => {
    expect(systemPromptFor('refund')).toContain("nor more than the payment's `refundable` fact");
    expect(systemPromptFor('credit')).not.toContain('refundable');
  });
});
