// Rule: an amount is an exact integer in its currency's smallest unit, and the money text people read states it
// exactly: every safe integer to the last cent or fils (a cap may be any safe integer, and the rules decider's text
// and an over_cap refusal quote it), and a value that is no safe integer (a whole number past 2^53, or not a whole
// number) is quoted as its number with why, never as money in exponent form, `NaN`, or rounded into another sum.
import { describe, expect, it } from 'vitest';
import { overCapProblem } from '../../src/core/approval.js';
import { moneyText } from '../../src/core/money-text.js';

describe('moneyText of a safe integer', () => {
  it('states an amount near 2^53 to the last minor unit, in every kind of currency', () => {
    expect(moneyText(9_007_199_254_740_985, 'usd')).toBe('$90071992547409.85');
    expect(moneyText(Number.MAX_SAFE_INTEGER, 'usd')).toBe('$90071992547409.91');
    expect(moneyText(9_007_199_254_740_985, 'eur')).toBe('90071992547409.85 EUR');
    expect(moneyText(Number.MAX_SAFE_INTEGER, 'kwd')).toBe('9007199254740.991 KWD');
    expect(moneyText(Number.MAX_SAFE_INTEGER, 'jpy')).toBe('9007199254740991 JPY');
    expect(moneyText(-9_007_199_254_740_985, 'usd')).toBe('-$90071992547409.85');
  });

  it('states small amounts as before', () => {
    expect(moneyText(0, 'usd')).toBe('$0.00');
    expect(moneyText(1, 'usd')).toBe('$0.01');
    expect(moneyText(10, 'usd')).toBe('$0.10');
    expect(moneyText(1, 'kwd')).toBe('0.001 KWD');
    expect(moneyText(5_120, 'kwd')).toBe('5.120 KWD');
    expect(moneyText(105, 'eur')).toBe('1.05 EUR');
  });

  it('quotes a cap near 2^53 exactly in an over-cap refusal', () => {
    expect(overCapProblem('ap_x', 9_007_199_254_740_985, 9_007_199_254_740_991, 'usd')).toContain('$90071992547409.85');
  });
});

describe('moneyText of a value that is no safe integer', () => {
  it('quotes a value that is not a whole number of minor units as its number, never rounded to the same money', () => {
    expect(moneyText(2_000.4, 'usd')).toBe('2000.4 (not a whole number of minor units of USD)');
    expect(moneyText(2_000.4, null)).toBe('2000.4 (not a whole number of minor units, currency unknown)');
    expect(moneyText(-0.5, 'jpy')).toBe('-0.5 (not a whole number of minor units of JPY)');
  });

  it('quotes a whole number past the largest exact one as its number, saying so, never as money in exponent form', () => {
    expect(moneyText(1e25, 'usd')).toBe('1e+25 (minor units of USD, too large to state exactly)');
    expect(moneyText(2 ** 53, 'kwd')).toBe('9007199254740992 (minor units of KWD, too large to state exactly)');
    for (const amount of [1e21, 1e25, 2 ** 53, 2_000.4]) {
      for (const currency of ['usd', 'eur', 'kwd', 'jpy', null]) expect(moneyText(amount, currency).startsWith(`${String(amount)} (`)).toBe(true);
    }
  });
});
