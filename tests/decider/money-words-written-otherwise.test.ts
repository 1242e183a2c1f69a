// Rule (DESIGN §3 I4, "never an effect the model did not ask for"): a refund's words are read for the sums they name
// however those sums are written, and its amount is checked against them in the case's currency. Yen written with 円,
// full-width digits and signs, Arabic-Indic digits and separators, KD/BD/JD/RO for the dinars and rial, a sum in
// number words ("twenty dollars") are read; a figure multiplied by 千 or 万 is a sum whose size is not read. A figure
// the amount is a hundred times (cents counted where the currency has none) is MODEL_DEVIATED even beside another
// figure that names the amount; one the amount is a hundredth of is excused only by a figure naming the amount or by
// the payment's own stated amount ("$1 goodwill on the $100.00 payment"), never by the approval's cap. Grouped figures
// with decimals ("1 234,56 €", "CHF 1'234.50") are read whole. A reason that names money but never the amount is
// accepted when its figures explain the amount: the figures the case does not state add up to it (each counted as the
// words count it: "two mugs at $12.00 each"), or it is a percentage, half, quarter or third of one of them.
import { describe, expect, it } from 'vitest';
import { MODEL_DEVIATED, type DecisionCase } from '../../src/decider/decider.js';
import { refundCase } from './cases.js';
import { configFor, decidedAfterLookup, judged } from './decider-support.js';
import { messagesServerSuite } from './messages-server.js';

const server = messagesServerSuite();
const config = configFor(() => server);

/** A refund case in `currency` on a payment of `paid`, all of it refundable, approved up to `cap`. */
function refundIn(currency: string, paid: number, cap: number): DecisionCase {
  const base = refundCase();
  return refundCase({
    approval: { ...base.approval, capCents: cap },
    facts: { get_payment: { ...base.facts.get_payment, amount_cents: paid, refundable: paid, refunded_by_others: 0, currency } },
  });
}

async function verdictOf(input: DecisionCase, amount: number, reason: string, text?: string): Promise<{ verdict: string; problems: string }> {
  return judged(await decidedAfterLookup(server, config, input, { amount_cents: amount, reason }, text), input);
}

const ACCEPTED = 'accepted';
const yen = () => refundIn('jpy', 1_000_000, 1_000_000);
/** The case each currency's rows below are decided on. */
const CASES: Readonly<Record<string, () => DecisionCase>> = { jpy: yen, kwd: () => refundIn('kwd', 100_000, 100_000), omr: () => refundIn('omr', 100_000, 100_000), usd: () => refundIn('usd', 10_000, 2_000) };
const caseIn = (currency: string): DecisionCase => (CASES[currency] ?? yen)();

describe('sums written with 円, full-width or Arabic-Indic digits, dinar abbreviations or number words are read', () => {
  it.each([
    ['jpy', 500_000, 'Goodwill refund of 5,000円 for the cracked jar.', '5000 JPY in its reason'],
    ['jpy', 500_000, '割れた瓶の返金として5,000円を返金します。', '5000 JPY in its reason'],
    ['jpy', 500_000, 'Goodwill refund of ¥５，０００ for the cracked jar.', '5000 JPY in its reason'],
    ['jpy', 500_000, 'Goodwill refund of ５０００円 for the cracked jar.', '5000 JPY in its reason'],
    ['jpy', 500_000, 'Goodwill refund of ￥5,000 for the cracked jar.', '5000 JPY in its reason'],
    ['jpy', 500_000, 'Goodwill refund of five thousand yen for the cracked jar.', '5000 JPY in its reason'],
    ['jpy', 500_000, 'Goodwill refund of 5千円 for the cracked jar.', 'a sum whose size is not read'],
    ['jpy', 500_000, 'Goodwill refund of 50万円 for the cracked jar.', 'a sum whose size is not read'],
    ['kwd', 20, 'Goodwill refund of ٢٠٫٠٠٠ د.ك for the cracked jar.', '20.000 KWD in its reason'],
    ['kwd', 20, 'Goodwill refund of KD 20.000 for the cracked jar.', '20.000 KWD in its reason'],
    ['kwd', 20, 'Goodwill refund of 20.000 KD for the cracked jar.', '20.000 KWD in its reason'],
    ['kwd', 20, 'Goodwill refund of ۲۰٫۰۰۰ KWD for the cracked jar.', '20.000 KWD in its reason'],
    ['omr', 20, 'Goodwill refund of OR 20.000 for the cracked jar.', '20.000 OMR in its reason'],
  ])('%s %i beside "%s" is MODEL_DEVIATED, naming %s', async (currency, amount, reason, named) => {
    const { verdict, problems } = await verdictOf(caseIn(currency), amount, reason);
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain(named);
  });

  it.each([
    ['jpy', 5_000, '割れた瓶の返金として5,000円を返金します。'],
    ['jpy', 5_000, 'Goodwill refund of ¥５，０００ for the cracked jar.'],
    ['kwd', 20_000, 'Goodwill refund of ٢٠٫٠٠٠ د.ك for the cracked jar.'],
    ['kwd', 20_000, 'Goodwill refund of KD 20.000 for the cracked jar.'],
    ['usd', 2_000, 'Goodwill refund of twenty dollars for the jar.'],
    ['usd', 2_000, 'Refund 20 or 30 dollars, whichever support agreed: 20 dollars.'],
    ['usd', 2_000, 'Refund $20 for the ORDER, 2 OR 3 DAYS LATE.'],
  ])('%s %i beside "%s", the amount the words name, is accepted', async (currency, amount, reason) => {
    expect(await verdictOf(caseIn(currency), amount, reason)).toEqual({ verdict: ACCEPTED, problems: '' });
  });

  it('"twenty dollars" beside 20 (twenty cents) is MODEL_DEVIATED', async () => {
    expect((await verdictOf(refundIn('usd', 10_000, 2_000), 20, 'Goodwill refund of twenty dollars for the jar.')).verdict).toBe(MODEL_DEVIATED);
  });
});

describe('a figure the amount is a hundred times is a deviation whatever else the words name', () => {
  it.each([
    ['Refund ¥5,000; the charge was ¥500,000.'],
    ["Goodwill refund of ¥5,000 for the cracked jar (JPY 500000 in the API's minor units)."],
    ['Goodwill refund of ¥5,000 for the cracked jar (500,000 yen in cents).'],
  ])('jpy 500000 beside "%s": MODEL_DEVIATED, saying the words name the amount and ¥5,000', async (reason) => {
    const { verdict, problems } = await verdictOf(yen(), 500_000, reason);
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain('but its words name that sum, and also: 5000 JPY in its reason');
    expect(problems).toContain('500000 is that sum counted in hundredths (cents), where JPY is counted in whole units');
  });

  it('a stated payment the amount is a hundred times is no excuse either ("the ¥10,000 payment" beside 1,000,000)', async () => {
    expect((await verdictOf(refundIn('jpy', 10_000, 2_000_000), 1_000_000, 'Full refund of the ¥10,000 payment.')).verdict).toBe(MODEL_DEVIATED);
  });

  it('a refund a hundredth of the payment the case states is a part of it: 100 beside "on the $100.00 payment" (paid $100.00) is accepted', async () => {
    expect(await verdictOf(refundIn('usd', 10_000, 2_000), 100, 'Goodwill refund on the $100.00 payment for the late delivery.')).toEqual({ verdict: ACCEPTED, problems: '' });
    expect(await verdictOf(refundIn('usd', 10_000, 2_000), 100, 'Goodwill refund of $1 of the $100.00 payment.')).toEqual({ verdict: ACCEPTED, problems: '' });
  });

  it.each([
    ['usd', 2_000, 2_000, 20, 'Full refund of the $20.00 payment.'],
    ['usd', 10_000, 2_000, 20, 'Refund $20.00 as approved.'],
    ['usd', 50_000, 2_000, 100, 'Goodwill refund on the $100.00 payment for the late delivery.'],
  ])('%s paid %i cap %i: %i beside "%s" (units written as cents; the figure the approval\'s, or not the case\'s) is MODEL_DEVIATED', async (currency, paid, cap, amount, reason) => {
    expect((await verdictOf(refundIn(currency, paid, cap), amount, reason)).verdict).toBe(MODEL_DEVIATED);
  });
});

describe('a grouped figure is read with its decimals', () => {
  it.each([
    ['eur', 123_456, 'Remboursement de 1 234,56 € pour la commande.'],
    ['eur', 123_456, 'Remboursement de 1\u202f234,56 € pour la commande.'],
    ['chf', 123_450, "Refund CHF 1'234.50 for the order."],
    ['usd', 123_456, 'Refund $1 234.56 for the order.'],
  ])('%s %i beside "%s": accepted', async (currency, amount, reason) => {
    expect(await verdictOf(refundIn(currency, 200_000, 200_000), amount, reason)).toEqual({ verdict: ACCEPTED, problems: '' });
  });

  it('eur 5600 beside "1 234,56 €" is MODEL_DEVIATED, naming 1234.56 EUR', async () => {
    const { verdict, problems } = await verdictOf(refundIn('eur', 200_000, 200_000), 5_600, 'Remboursement de 1 234,56 € pour la commande.');
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toMatch(/1[,.]?234\.56/);
  });
});

describe('a reason whose figures explain the amount is accepted; one whose figures do not is a deviation', () => {
  it.each([
    ['usd', 10_000, 2_000, 1_620, 'Refund the $15.00 accessory plus $1.20 sales tax.'],
    ['gbp', 10_000, 2_000, 2_000, 'Refund £15 for the jar and £5 postage.'],
    ['jpy', 10_000, 20_000, 2_500, 'Refund the 2000 yen item and ¥500 shipping.'],
    ['usd', 10_000, 2_000, 2_000, 'Refund 50% of the $40.00 jar price.'],
    ['usd', 10_000, 2_000, 2_000, 'Half of the $40 jar.'],
    ['usd', 10_000, 2_000, 1_000, 'A quarter of the $40 jar.'],
    ['usd', 10_000, 2_000, 1_333, 'A third of the $40 jar.'],
    ['usd', 10_000, 3_000, 2_400, 'Refund two mugs at $12.00 each.'],
    ['usd', 10_000, 3_000, 2_400, 'Refund 2 x $12.00 for the mugs.'],
  ])('%s paid %i cap %i: %i beside "%s" is accepted', async (currency, paid, cap, amount, reason) => {
    expect(await verdictOf(refundIn(currency, paid, cap), amount, reason)).toEqual({ verdict: ACCEPTED, problems: '' });
  });

  it.each([
    ['usd', 10_000, 2_000, 2_000, 'Customer asked for $50; refunding the approved goodwill amount.'],
    ['usd', 10_000, 2_000, 1_700, 'Refund the $15.00 accessory plus $1.20 sales tax.'],
    ['usd', 10_000, 2_000, 1_500, 'Refund 50% of the $40.00 jar price.'],
    ['usd', 10_000, 5_000, 3_600, 'Refund two mugs at $12.00 each.'],
    ['gbp', 10_000, 2_000, 200, 'Refund £15 for the jar and £5 postage.'],
    ['jpy', 1_000_000, 1_000_000, 500_000, 'Refund the ¥3,000 item and ¥2,000 shipping.'],
  ])('%s paid %i cap %i: %i beside "%s" is MODEL_DEVIATED', async (currency, paid, cap, amount, reason) => {
    expect((await verdictOf(refundIn(currency, paid, cap), amount, reason)).verdict).toBe(MODEL_DEVIATED);
  });
});
