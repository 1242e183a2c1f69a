// Rule: a deviation's problems say what was wrong, clearly: the list of amounts "not a whole count of cents" names the
// unreadable values, not the clean amount_cents beside them (a person reading "gave an amount that is not a whole count
// of cents (amount_cents 2000, …)" is told the 2000 was unreadable).
import { describe, expect, it } from 'vitest';
import { outcome, replies, useServer } from './malformed-outcome.js';

useServer();

describe('the problem sentence for an unreadable figure beside a clean amount', () => {
  it('names the unreadable value only', async () => {
    const result = await outcome(replies.toolUse('issue_refund', { amount_cents: 2000, reason: 'As approved.', amount: '$5,000.00' }));
    const problems = (result as { problems: string[] }).problems;
    const sentence = problems.find((problem) => problem.includes('not a whole count of cents')) ?? '';
    expect(sentence).toContain('amount "$5,000.00"');
    // Not "…not a whole count of cents (amount_cents 2000, amount "$5,000.00")…", which calls the 2000 unreadable.
    expect(sentence).not.toContain('amount_cents 2000');
  });
});
