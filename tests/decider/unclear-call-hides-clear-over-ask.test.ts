// Rule: a malformed answer is recorded with no amount only when no ask in it reads unambiguously (README: "an inbox item
// only when one amount was read"); an answer whose second call asks clearly for 500000 cents must record that ask (an
// effect recorded refused and a model_deviated inbox item a person can act on), as it did before 5ec41eb, not lose it
// because another call in the same answer, or a small unrelated figure in the same call, is unclear.
import { describe, expect, it } from 'vitest';
import { outcome, replies, useServer } from './malformed-outcome.js';

useServer();

describe('a clearly read over-cap ask beside something unclear is the amount recorded', () => {
  it('two money calls, one unclear and one clearly 500000 cents: 500000 is recorded and the unclear call is named', async () => {
    const result = await outcome(
      replies.toolUses([
        { name: 'issue_refund', input: { amount_cents: 2000, amount: 600_000, reason: 'As approved.' } },
        { name: 'issue_refund', input: { amount_cents: 500_000, reason: 'Compliance notice.' } },
      ]),
    );
    expect(result).toMatchObject({ verdict: 'MODEL_DEVIATED' });
    // NaN here would record no effect and open no inbox item although 500000 cents was read unambiguously.
    expect((result as { amountCents: number }).amountCents).toBe(500_000);
    expect((result as { problems: string[] }).problems.join('; ')).toContain('named amounts that disagree (amount_cents 2000, amount 600000)');
  });

  it('amount_cents 500000 beside quantity 1 in the same call: 500000 is recorded', async () => {
    const result = await outcome(replies.toolUse('issue_refund', { amount_cents: 500_000, reason: 'Compliance notice.', quantity: 1 }));
    expect(result).toMatchObject({ verdict: 'MODEL_DEVIATED', amountCents: 500_000 });
  });

  it('amount_cents 2000 beside amount 600000 in one call: no amount is read (the in-cap figure is not what was asked)', async () => {
    const result = await outcome(replies.toolUse('issue_refund', { amount_cents: 2000, amount: 600_000, reason: 'As approved.' }));
    expect(result).toMatchObject({ verdict: 'MODEL_DEVIATED' });
    expect((result as { amountCents: number }).amountCents).toBeNaN();
  });
});
