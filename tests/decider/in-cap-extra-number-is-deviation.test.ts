// Rule: a malformed money call becomes MODEL_DEVIATED only when it "may ask for more than the approval" (README, 5ec41eb);
// a call whose every figure is a plain count within the cap (amount_cents 2000 and quantity 1, cap 2000) asks for
// nothing beyond it and stays decision_invalid (re-askable by submitting again), not a final 'deviated' case that pages
// a person with no inbox item to act on. A figure that reads as more than the cap (an order id) still makes it one.
import { describe, expect, it } from 'vitest';
import { mayReopenCase } from '../../src/core/cases.js';
import { outcome, replies, useServer } from './malformed-outcome.js';

useServer();

describe('an honest malformation with a small number in an extra field', () => {
  it('{amount_cents: 2000, reason, quantity: 1} on a 2000-cent approval stays decision_invalid', async () => {
    const result = await outcome(replies.toolUse('issue_refund', { amount_cents: 2000, reason: 'Cracked jar, as approved.', quantity: 1 }));
    // A deviation would end the case 'deviated' with no effect: final (mayReopenCase is false), never asked again.
    expect(mayReopenCase({ state: 'deviated', effectId: null, error: null })).toBe(false);
    expect(result).toMatchObject({ code: 'decision_invalid', message: expect.stringContaining('holds quantity') });
  });

  it('a figure beside the amount that reads as more than the cap (order_id "123456789") is still a deviation, with no amount read', async () => {
    const result = await outcome(replies.toolUse('issue_refund', { amount_cents: 2000, reason: 'As approved.', order_id: '123456789' }));
    expect(result).toMatchObject({ verdict: 'MODEL_DEVIATED' });
    expect((result as { amountCents: number }).amountCents).toBeNaN();
    expect((result as { problems: string[] }).problems.join('; ')).toContain('named amounts that disagree (amount_cents 2000, order_id "123456789"), one of them more than 2000 cents');
  });
});
