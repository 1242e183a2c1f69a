// Rule: re-approving a model_deviated item approves the model's decision, so an item whose model chose another kind of
// money than its case asks for (a credit on a refund case, a refund on a credit case) offers no re-approval: the
// deviation is recorded as the case's own effect (its kind, its subject, the cents asked for), and re-approving it
// would send money the model never decided. Its text says so, and what a person does instead (dismiss it, decide the
// case again as a new case); it never offers to "approve the amount the model asked for". A deviation of the case's
// own kind keeps its re-approval and that wording (found by review: wrong-kind-reapproval).
import { describe, expect, it } from 'vitest';
import { deviatedKind, itemActions } from '../../src/core/inbox.js';
import { checkDecision, MODEL_DEVIATED, type Decision } from '../../src/decider/decider.js';
import { creditCase, CUSTOMER, PAYMENT, refundCase } from './cases.js';

const credit: Decision = { action: 'credit', amountCents: 1_500, description: 'Credit $15.00 to the account', model: 'm', text: 't' };
const refund: Decision = { action: 'refund', amountCents: 800, reason: 'Goodwill.', model: 'm', text: 't' };

function message(decision: Decision, input: ReturnType<typeof refundCase>): string {
  const check = checkDecision(decision, input.approval, input.kind, input);
  if (check.verdict !== MODEL_DEVIATED) throw new Error(`expected ${MODEL_DEVIATED}, got ${check.verdict}`);
  return check.message;
}

const item = (subject: string, decided: string | undefined) => ({ kind: 'model_deviated' as const, subject, changes: [], detail: decided === undefined ? { decided_cents: 1_500 } : { decided_action: decided, decided_cents: 1_500 } });

describe('a deviation of another kind than its case', () => {
  it('a credit on a refund case: the text says no re-approval is offered, and the refund it would send', () => {
    const text = message(credit, refundCase());
    expect(text).toContain('The model chose a credit where the case asks for a refund, so its decision is not offered for re-approval');
    expect(text).toContain(`re-approved, it would send a refund of $15.00 to payment ${PAYMENT}, which the model never decided`);
    expect(text).toContain('decides the case again as a new case, under a new case id');
    expect(text).not.toContain('approve the amount the model asked for');
  });

  it('a refund on a credit case: the same, naming the credit it would send to the customer', () => {
    const text = message(refund, creditCase());
    expect(text).toContain('The model chose a refund where the case asks for a credit');
    expect(text).toContain(`re-approved, it would send a credit of $8.00 to customer ${CUSTOMER}, which the model never decided`);
    expect(text).not.toContain('approve the amount the model asked for');
  });

  it('its item offers only a dismissal; one of the case kind keeps its re-approval, as does an item whose detail does not say', () => {
    expect(deviatedKind(item(`payment:${PAYMENT}`, 'credit'))).toBe('credit');
    expect(itemActions(item(`payment:${PAYMENT}`, 'credit'))).toEqual(['dismiss']);
    expect(itemActions(item(`customer:${CUSTOMER}`, 'refund'))).toEqual(['dismiss']);
    expect(itemActions(item(`payment:${PAYMENT}`, 'refund'))).toEqual(['reapprove', 'dismiss']);
    expect(itemActions(item(`customer:${CUSTOMER}`, 'credit'))).toEqual(['reapprove', 'dismiss']);
    expect(itemActions(item(`payment:${PAYMENT}`, undefined))).toEqual(['reapprove', 'dismiss']);
    // Only model deviations carry a decided kind: another kind's item is judged as before.
    expect(itemActions({ ...item(`payment:${PAYMENT}`, 'credit'), kind: 'stale_premise' })).toEqual(['reapprove', 'dismiss']);
  });

  it('a deviation of the case kind keeps offering to approve the amount the model asked for', () => {
    expect(message({ ...refund, amountCents: 3_000 }, refundCase())).toMatch(/a person must decide this case, or approve the amount the model asked for\.$/);
  });
});
