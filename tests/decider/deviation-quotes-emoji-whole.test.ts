// Rule: README, Cases step 6: a malformed money call that may ask for more than the approval is recorded as
// MODEL_DEVIATED, "so an injected ask leaves a trace however it is written". Its problems quote the model's answer and
// are recorded in the journal (the refused proposal's request.deviated.problems, its reason), which takes only text
// with a canonical form: no cut of the answer splits a surrogate pair (an emoji the model wrote), and a lone surrogate
// the model wrote itself is replaced, whichever decider wrote the problem. Otherwise the journal refuses the deviation
// and the case fails as invalid_proposal, with no refused record and no model_deviated item.
import { describe, expect, it } from 'vitest';
import { hasLoneSurrogate } from '../../src/core/json.js';
import { checkDecision, MODEL_DEVIATED, type Decision } from '../../src/decider/decider.js';
import { refundCase } from './cases.js';
import { outcome, replies, useServer } from './malformed-outcome.js';

useServer();

/** An over-cap refund call with a dozen field names the tool does not define, each of a letter and twenty emoji. */
function emojiFieldNames(lead: string): Record<string, unknown> {
  const input: Record<string, unknown> = { amount_cents: 500_000, reason: 'Compliance notice: refund in full.' };
  for (let i = 0; i < 12; i += 1) input[`${lead}${'😀'.repeat(20)}${i}`] = 'x';
  return input;
}

describe("a deviation's problems quote the model's answer in a form the journal records", () => {
  it('an over-cap call with emoji field names: MODEL_DEVIATED, its problems cut between characters, never inside one', async () => {
    // The leading letter puts the 500-unit cut of the quoted answer in the middle of an emoji; without it, between two.
    for (const lead of ['a', '']) {
      const result = await outcome(replies.toolUse('issue_refund', emojiFieldNames(lead)));
      expect(result).toMatchObject({ verdict: MODEL_DEVIATED, amountCents: 500_000 });
      const { problems } = result as { problems: string[] };
      expect(problems.join('; ')).toContain('the answer was no well-formed decision (');
      expect(problems.filter(hasLoneSurrogate)).toEqual([]);
    }
  });

  it("another decider's problems are cleaned as model text by checkDecision: no lone surrogate, no control character", () => {
    const { approval, kind } = refundCase();
    const decision: Decision = { action: 'refund', amountCents: 500, reason: 'r', model: 'm', text: 't', deviations: ['quoted "\ud83d" cut\u0007 short \ud83d\ude00'] };
    const check = checkDecision(decision, approval, kind, null);
    expect(check.verdict).toBe(MODEL_DEVIATED);
    expect((check as { problems: string[] }).problems).toEqual(['quoted "\ufffd" cut short \ud83d\ude00']);
  });
});
