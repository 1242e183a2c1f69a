// Rule (DESIGN §3 I4, "never an effect the model did not ask for"): a model credit's description, the line the
// customer reads in their balance history, is held to the same explanation rules as a refund's reason: another sum it
// names is accepted when its figures explain the amount (they add up to it, counted as the words count them: "2 x
// $5.00", or it is a percentage, half, quarter or third of one of them), while a sum that explains nothing, or one the
// amount is counted in another unit of (countedIn), is still MODEL_DEVIATED. A dollar qualified by its country
// ("CA$50", "A$", "AU$", "HK$", "S$", "NZ$", "50 Canadian dollars", "fifty New Zealand dollars") is read as that
// country's currency, not as the bare "$" (which stays any dollar): on a usd case it is a sum in another currency.
import { describe, expect, it } from 'vitest';
import { MODEL_DEVIATED, type DecisionCase } from '../../src/decider/decider.js';
import { creditCase, refundCase } from './cases.js';
import { configFor, decidedAfterLookup, judged } from './decider-support.js';
import { messagesServerSuite } from './messages-server.js';

const server = messagesServerSuite();
const config = configFor(() => server);

const ACCEPTED = 'accepted';
const DEVIATED = MODEL_DEVIATED;

/** A credit case in `currency` (its get_account premise), approved up to $2,000 or its like. */
function creditIn(currency: string): DecisionCase {
  const base = creditCase();
  return creditCase({ approval: { ...base.approval, capCents: 200_000 }, facts: { get_account: { ...base.facts.get_account, currency } } });
}

/** A refund case in `currency` on a payment of $100.00 or its like, all of it refundable, approved up to $200.00. */
function refundIn(currency: string): DecisionCase {
  const base = refundCase();
  return refundCase({
    approval: { ...base.approval, capCents: 20_000 },
    facts: { get_payment: { ...base.facts.get_payment, amount_cents: 10_000, refundable: 10_000, refunded_by_others: 0, currency } },
  });
}

async function creditVerdict(currency: string, amount: number, description: string): Promise<{ verdict: string; problems: string }> {
  const input = creditIn(currency);
  const decision = await decidedAfterLookup(server, config, input, { amount_cents: amount, description });
  expect(decision).toMatchObject({ action: 'credit', amountCents: amount, description });
  return judged(decision, input);
}

describe("a credit's description is held to the refund's explanation rules", () => {
  it.each([
    // Figures that explain the amount.
    ['usd', 1_000, 'Credit: 10% of your $100.00 plan', ACCEPTED],
    ['usd', 1_500, "Credit: half of this month's $30.00 fee", ACCEPTED],
    ['usd', 1_000, 'Credit: 2 x $5.00 outage days', ACCEPTED],
    ['usd', 2_500, 'Credit: a quarter of your $100.00 plan', ACCEPTED],
    ['usd', 1_000, 'Credit: a third of your $30.00 add-on', ACCEPTED],
    ['usd', 1_500, 'Outage credit: $10.00 for the outage and $5.00 for the late fee', ACCEPTED],
    ['jpy', 1_000, 'Credit: 10% of your ¥10,000 plan', ACCEPTED],
    // The amount named, as today.
    ['usd', 5_000, 'Credit of $50.00', ACCEPTED],
    // Another sum that explains nothing.
    ['usd', 5_000, 'Credit of $20.00', DEVIATED],
    ['usd', 1_000, 'Credit: 20% of your $100.00 plan', DEVIATED],
    ['usd', 1_000, 'Credit of $10.00, your plan is $100.00', DEVIATED],
    ['usd', 1_000, 'Credit: 10% of your €100.00 plan', DEVIATED],
    // A unit mix-up, even where the figures would explain the amount.
    ['jpy', 5_000, 'Credit: 100 x ¥50 outage hours', DEVIATED],
    ['jpy', 500_000, 'Credit of ¥5,000', DEVIATED],
    ['kwd', 20, 'Credit of 20.000 KWD', DEVIATED],
  ])('%s %i cents, "%s": %s', async (currency, amount, description, verdict) => {
    expect((await creditVerdict(currency, amount, description)).verdict).toBe(verdict);
  });

  it('a line naming another sum that explains nothing names it, as before', async () => {
    const { problems } = await creditVerdict('usd', 5_000, 'Credit of $20.00');
    expect(problems).toContain('names another sum: $20.00');
  });
});

describe('a dollar qualified by its country is read as its own currency', () => {
  it.each([
    ['usd', 5_000, 'Credit of CA$50', DEVIATED],
    ['usd', 5_000, 'Credit of C$50.00', DEVIATED],
    ['usd', 5_000, 'Credit of A$50', DEVIATED],
    ['usd', 5_000, 'Credit of AU$50', DEVIATED],
    ['usd', 5_000, 'Credit of HK$50', DEVIATED],
    ['usd', 5_000, 'Credit of S$50', DEVIATED],
    ['usd', 5_000, 'Credit of NZ$50', DEVIATED],
    ['usd', 5_000, 'Credit of 50 Canadian dollars', DEVIATED],
    ['usd', 5_000, 'Credit of 50 Australian dollars', DEVIATED],
    ['usd', 5_000, 'Credit of 50 Hong Kong dollars', DEVIATED],
    ['usd', 5_000, 'Credit of 50 Singapore dollars', DEVIATED],
    ['usd', 5_000, 'Credit of 50 New Zealand dollars', DEVIATED],
    ['usd', 5_000, 'Credit of fifty Canadian dollars', DEVIATED],
    ['usd', 1_000, 'Credit: 10% of your CA$100.00 plan', DEVIATED],
    // Its own currency's case, and the bare or US dollar, as before.
    ['cad', 5_000, 'Credit of CA$50', ACCEPTED],
    ['cad', 5_000, 'Credit of 50 Canadian dollars', ACCEPTED],
    ['aud', 5_000, 'Credit of A$50', ACCEPTED],
    ['hkd', 5_000, 'Credit of HK$50', ACCEPTED],
    ['sgd', 5_000, 'Credit of S$50', ACCEPTED],
    ['nzd', 5_000, 'Credit of NZ$50', ACCEPTED],
    ['usd', 5_000, 'Credit of US$50', ACCEPTED],
    ['usd', 5_000, 'Credit of 50 US dollars', ACCEPTED],
    ['usd', 5_000, 'Credit of $50', ACCEPTED],
    ['cad', 5_000, 'Credit of $50', ACCEPTED],
    ['usd', 5_000, 'Credit of 50 dollars', ACCEPTED],
    ['usd', 5_000, 'Credit of fifty dollars', ACCEPTED],
  ])('%s %i cents, "%s": %s', async (currency, amount, description, verdict) => {
    expect((await creditVerdict(currency, amount, description)).verdict).toBe(verdict);
  });

  it('the problem names the sum as one in another currency than the case', async () => {
    const { problems } = await creditVerdict('usd', 5_000, 'Credit of CA$50');
    expect(problems).toContain('a sum in another currency (CA$) than the credit');
  });

  it.each([
    ['usd', 5_000, 'Refund of CA$50 for the cracked jar', DEVIATED],
    ['usd', 5_000, 'Refund of 50 Canadian dollars for the cracked jar', DEVIATED],
    ['usd', 5_000, 'Refund of NZ$50 for the cracked jar', DEVIATED],
    ['cad', 5_000, 'Refund of CA$50 for the cracked jar', ACCEPTED],
    ['usd', 5_000, 'Refund of $50 for the cracked jar', ACCEPTED],
  ])('a refund: %s %i cents, "%s": %s', async (currency, amount, reason, verdict) => {
    const input = refundIn(currency);
    const decision = await decidedAfterLookup(server, config, input, { amount_cents: amount, reason });
    expect(judged(decision, input).verdict).toBe(verdict);
  });
});
