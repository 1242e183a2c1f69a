// Rule (refundSumsProblem, readable, UNIT_WORDS): a refund's words are read for the sums they name as the currency's
// own country writes them: `5,000원`, `5000 won` and `오천 원` in krw, `5.000 đồng` in vnd, `五千円`, `一万円` and `5,000 JP¥`
// in jpy. A call counting cents where the currency has none (500000 beside 5,000 won) is MODEL_DEVIATED, a person sees
// it; the same words beside the amount they name are accepted, and `won` on a case in another currency is the English
// word ("2 won disputes"), no sum.
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
  return refundCase({ approval: { ...base.approval, capCents: cap }, facts: { get_payment: { ...base.facts.get_payment, amount_cents: paid, refundable: paid, refunded_by_others: 0, currency } } });
}

async function judgedCall(currency: string, amount: number, reason: string): Promise<{ verdict: string; problems: string }> {
  const input = currency === 'usd' ? refundIn('usd', 10_000, 2_000) : refundIn(currency, 2_000_000, 2_000_000);
  return judged(await decidedAfterLookup(server, config, input, { amount_cents: amount, reason }), input);
}

describe('a sum written as its country writes it, beside a call for a hundred times it', () => {
  it.each([
    ['krw', 500_000, 'Goodwill refund of 5,000원 for the cracked jar.', '5000 KRW in its reason'],
    ['krw', 500_000, '깨진 용기에 대한 환불 5000원을 돌려드립니다.', '5000 KRW in its reason'],
    ['krw', 500_000, 'Goodwill refund of 5000 won for the cracked jar.', '5000 KRW in its reason'],
    ['krw', 500_000, 'Goodwill refund of 오천 원 for the cracked jar.', '5000 KRW in its reason'],
    ['krw', 3_500_000, 'Goodwill refund of 삼만 오천 원 for the cracked jar.', '35000 KRW in its reason'],
    ['vnd', 500_000, 'Goodwill refund of 5.000 đồng for the cracked jar.', '5000 VND in its reason'],
    ['jpy', 500_000, 'Goodwill refund of 五千円 for the cracked jar.', '5000 JPY in its reason'],
    ['jpy', 500_000, '割れた瓶の返金として五千円を返金します。', '5000 JPY in its reason'],
    ['jpy', 1_000_000, 'Goodwill refund of 一万円 for the cracked jar.', '10000 JPY in its reason'],
    ['jpy', 500_000, 'Goodwill refund of 5,000 JP¥ for the cracked jar.', '5000 JPY in its reason'],
    ['jpy', 500_000, 'Goodwill refund of JP¥5,000 for the cracked jar.', '5000 JPY in its reason'],
  ])('%s %i beside %j is MODEL_DEVIATED, naming %s', async (currency, amount, reason, named) => {
    const { verdict, problems } = await judgedCall(currency, amount, reason);
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain(named);
  });
});

describe('the same words beside the amount they name, and the English word won, stay accepted', () => {
  it.each([
    ['krw', 5_000, 'Goodwill refund of 5,000원 for the cracked jar.'],
    ['krw', 5_000, 'Goodwill refund of 5000 won for the cracked jar.'],
    ['krw', 5_000, 'Goodwill refund of 오천 원 for the cracked jar.'],
    ['krw', 5_000, '사원 확인 후 환불 5000원을 돌려드립니다.'],
    ['vnd', 5_000, 'Goodwill refund of 5.000 đồng for the cracked jar.'],
    ['jpy', 5_000, 'Goodwill refund of 五千円 for the cracked jar.'],
    ['jpy', 10_000, 'Goodwill refund of 一万円 for the cracked jar.'],
    ['jpy', 5_000, '関東一円への配送で割れた瓶の返金として5,000 JP¥を返金します。'],
    ['usd', 2_000, 'Goodwill refund of $20.00; the customer has 2 won disputes with us and two won chargebacks.'],
  ])('%s %i beside %j', async (currency, amount, reason) => {
    expect(await judgedCall(currency, amount, reason)).toEqual({ verdict: 'accepted', problems: '' });
  });
});
