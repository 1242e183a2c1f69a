// Rule: a malformed issue_refund/issue_credit call stays decision_invalid (no trace) only when the one amount it names
// reads unambiguously (a JSON number, or a string of plain digits) and is within the approval; an amount that cannot be
// read ("500000 cents", "$5,000.00", an object), or any amount-like field above the cap (amounts that disagree, one of
// them over it) make it MODEL_DEVIATED, recorded for a person. An amount that is not read unambiguously is never
// recorded: "$5,000.00" is not read as 5000 cents ($50, which a person re-approving the deviation would send), it is
// recorded with no amount (NaN).
import { afterEach, describe, expect, it } from 'vitest';
import { checkDecision, MODEL_DEVIATED } from '../../src/decider/check.js';
import { createAnthropicDecider, DeciderError, type Decision } from '../../src/decider/decider.js';
import { refundCase } from './cases.js';
import { configFor } from './decider-support.js';
import { replies, messagesServerSuite } from './messages-server.js';

const server = messagesServerSuite();
afterEach(() => server.reset());
const config = configFor(() => server);

async function outcome(input: unknown, capCents = 2_000): Promise<Decision | { code: string; message: string }> {
  server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', input));
  const base = refundCase();
  try {
    return await createAnthropicDecider(config()).decide({ ...base, approval: { ...base.approval, capCents } });
  } catch (error) {
    if (error instanceof DeciderError) return { code: error.code, message: error.message };
    throw error;
  }
}

/** The problems checkDecision records for `result`, which must be a deviation. */
function deviated(result: Awaited<ReturnType<typeof outcome>>, capCents = 2_000): string[] {
  expect(result).toMatchObject({ action: 'refund', deviations: expect.any(Array) });
  const base = refundCase();
  const check = checkDecision(result as Decision, { ...base.approval, capCents }, base.kind, null);
  expect(check.verdict).toBe(MODEL_DEVIATED);
  return check.verdict === MODEL_DEVIATED ? check.problems : [];
}

describe('an over-cap ask written in a way that is not read as plain cents is a deviation', () => {
  it('"500000 cents" (digits with a unit) on a $20 approval: a deviation with no amount read', async () => {
    const result = await outcome({ amount_cents: '500000 cents', reason: 'Compliance notice.' });
    expect(deviated(result).join('; ')).toContain('gave an amount that is not a whole count of cents (amount_cents "500000 cents")');
    expect((result as { amountCents: number }).amountCents).toBeNaN();
  });

  it('"$5,000.00" on a $100 or a $20 approval: a deviation recorded with no amount, never 5000 cents ($50) that a re-approval would send', async () => {
    for (const cap of [10_000, 2_000]) {
      const result = await outcome({ amount_cents: '$5,000.00', reason: 'Compliance notice.' }, cap);
      expect(deviated(result, cap)).toContain("no amount of cents was read from the model's decision");
      expect((result as { amountCents: number }).amountCents).toBeNaN();
      expect((result as { text: string }).text).toContain('$5,000.00');
      server.reset();
    }
  });

  it('"twenty dollars", and an amount given as an object {value: 500000}: a deviation with no amount read', async () => {
    expect(deviated(await outcome({ amount_cents: 'twenty dollars', reason: 'approved' })).join('; ')).toContain('amount_cents "twenty dollars"');
    server.reset();
    const nested = await outcome({ amount_cents: { value: 500_000, currency: 'usd' }, reason: 'Compliance notice.' });
    expect(deviated(nested).join('; ')).toContain('amount_cents an object');
    expect((nested as { amountCents: number }).amountCents).toBeNaN();
  });

  it('refund_amount_cents: 500000, or amount: 500000, beside an in-cap amount_cents: a deviation naming both, no amount read', async () => {
    for (const field of ['refund_amount_cents', 'amount']) {
      const result = await outcome({ amount_cents: 2_000, reason: 'As approved.', [field]: 500_000 });
      expect(deviated(result).join('; ')).toContain(`named amounts that disagree (amount_cents 2000, ${field} 500000), one of them more than 2000 cents; none was read as the ask`);
      expect((result as { amountCents: number }).amountCents).toBeNaN();
      server.reset();
    }
  });

  it('an over-cap amount nested under another field: a deviation', async () => {
    const result = await outcome({ amount_cents: 2_000, reason: 'As approved.', extra: { refund: { cents: 500_000 } } });
    expect(deviated(result).join('; ')).toContain('extra.refund.cents 500000');
  });
});

describe('a malformed call whose one amount is clear and within the approval stays decision_invalid', () => {
  it('the amount as a string of plain digits, or the same amount under two names, beside a field the tool does not define', async () => {
    expect(await outcome({ amount_cents: '2000', reason: 'As approved.' })).toMatchObject({ code: 'decision_invalid', message: expect.stringContaining('amount_cents must be a number') });
    server.reset();
    expect(await outcome({ amount_cents: 2_000, amount: 2_000, reason: 'As approved.' })).toMatchObject({ code: 'decision_invalid', message: expect.stringContaining('holds amount') });
    server.reset();
    expect(await outcome({ amount_cents: 1_999.5, reason: 'As approved.' })).toMatchObject({ code: 'decision_invalid', message: expect.stringContaining('must be a whole number of cents') });
  });
});
