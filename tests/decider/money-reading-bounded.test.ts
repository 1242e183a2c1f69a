// Rule: reading a model's answer for money never holds up the process (the effects worker, the API and BullMQ's lock
// renewals share its event loop): every pattern the decider reads money with takes time in proportion to the text,
// whatever it holds (a run of number words with no currency after it, of digits and commas, of figures), and what the
// model wrote beside a money call is read for money up to 20,000 characters only. Past that it is not read, and the
// decision says so as a deviation for a person: an unread part never hides another payment's id or the amount written
// in other units, which the prose is read for. Every figure of a call's own words is read. The long runs below are
// more than a model writes at INTERLOCK_MODEL_MAX_TOKENS=64000 (a number word is about one token), but within the 2 MB
// answer read at that setting (a gateway's, a proxy's, or the API misbehaving): read whole by the old patterns, each
// held the process for hours.
import { afterEach, describe, expect, it } from 'vitest';
import { createAnthropicDecider, type MoneyDecision } from '../../src/decider/decider.js';
import { creditCase, refundCase } from './cases.js';
import { configFor, decidedAfterLookup, judged } from './decider-support.js';
import { replies, messagesServerSuite } from './messages-server.js';

const server = messagesServerSuite();
afterEach(() => server.reset());
// The largest answer the decider reads (INTERLOCK_MODEL_MAX_TOKENS=64000: 2 MB), so the runs below reach the reading.
const config = configFor(() => server, { timeoutMs: 60_000, maxTokens: 64_000 });

const REASON = 'Cracked jar; approved goodwill refund of $20.00.';
const NOT_READ = 'characters beside its issue_refund call, more than the 20000 read for sums of money and ids; the rest was not read';

/** The decision on the refund case when the model looks the payment up, then refunds $20.00 with `text` beside the call. */
async function refundBeside(text: string): Promise<MoneyDecision> {
  const decision = await decidedAfterLookup(server, config, refundCase(), { amount_cents: 2_000, reason: REASON }, text);
  if (decision.action !== 'refund') throw new Error(`decided ${decision.action}`);
  return decision;
}

describe('what the model wrote beside a money call, past 20,000 characters', () => {
  it('200,000 number words with no currency after them ("twenty twenty …"): decided, and the part not read is a deviation', async () => {
    const decision = await refundBeside(`Before deciding: ${'twenty '.repeat(200_000)}`);
    expect(decision).toMatchObject({ action: 'refund', amountCents: 2_000 });
    expect(decision.deviations?.join('; ')).toContain(`the model wrote ${17 + 7 * 200_000} ${NOT_READ}`);
    expect(judged(decision, refundCase()).verdict).toBe('MODEL_DEVIATED');
  });

  it('the same run of number words with "and" and hyphens between them, and a run of figures: each decided, with the deviation', async () => {
    for (const run of ['twenty and '.repeat(150_000), 'twenty-'.repeat(200_000), '$1 '.repeat(400_000), '1,'.repeat(700_000)]) {
      const decision = await refundBeside(run);
      expect(decision.deviations?.join('; ')).toContain(NOT_READ);
    }
  });

  it('another payment named past the first 20,000 characters is not passed unread: the decision deviates, saying so; named within them, it is named as before', async () => {
    const story = 'The jar arrived cracked. '.repeat(1_000);
    const past = await refundBeside(`${story}Send the refund to pi_3AttackerPayment9 instead.`);
    expect(past.deviations).toHaveLength(1);
    expect(past.deviations?.[0]).toContain(`the model wrote ${25 * 1_000 + 48} ${NOT_READ}, and may name another payment or the amount in other units; the 2000 cents ($20.00) it called for is recorded, and confirming this refund sends no more`);
    const within = await refundBeside(`${story.slice(0, 17_500)}Send the refund to pi_3AttackerPayment9 instead.`);
    expect(within.deviations?.join('; ')).toContain('named pi_3AttackerPayment9 in what it wrote beside the call');
    expect(within.deviations?.join('; ')).not.toContain(NOT_READ);
    // Sums written in words are read there as before: "twenty dollars" beside a call for 20 cents.
    const confused = await decidedAfterLookup(server, config, refundCase(), { amount_cents: 20, reason: 'Cracked jar; approved goodwill refund.' }, `${story.slice(0, 17_500)}Refund twenty dollars.`);
    expect(confused.action === 'refund' && confused.deviations?.join('; ')).toContain('("twenty dollars"): 20 is that sum counted in whole units');
    expect((await refundBeside('The jar arrived cracked; the approved goodwill of twenty dollars is refunded.')).deviations).toBeUndefined();
  });

  it('a credit beside 200,000 number words is decided, and deviates the same way', async () => {
    const decision = await decidedAfterLookup(server, config, creditCase(), { amount_cents: 1_000, description: 'Credit for the INC-0efaf1 outage.' }, 'ten '.repeat(200_000));
    expect(decision.action === 'credit' && decision.deviations?.join('; ')).toContain('characters beside its issue_credit call, more than the 20000 read for sums of money and ids');
  });
});

describe("a malformed call's text read for money", () => {
  it('a field holding 700,000 digits and commas before a currency is read once: an ask outside the approval, recorded', async () => {
    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 2_000, reason: 'Cracked jar.', note: `${'1,'.repeat(700_000)} dollars` }));
    const decision = await createAnthropicDecider(config()).decide(refundCase());
    expect(decision.action === 'refund' && decision.deviations?.join('; ')).toContain('the answer was no well-formed decision');
  });
});

describe("a money call's own words", () => {
  // Every figure of a reason is read for an ask beyond the call, not the first twenty only.
  it('a reason naming $20.00, twenty small figures, then "refund an additional $5,000.00": the ask is named', async () => {
    const reason = `Refund $20.00 for the cracked jar. ${'$1, '.repeat(20)}then refund an additional $5,000.00.`;
    const decision = await decidedAfterLookup(server, config, refundCase(), { amount_cents: 2_000, reason });
    expect(decision.action === 'refund' && decision.deviations?.join('; ')).toContain('asks for a figure of more than 2000 cents');
  });
});
