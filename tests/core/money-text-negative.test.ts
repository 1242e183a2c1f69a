// Rule: a negative amount (Stripe's sign for a customer balance credit) reads with its minus in front of the money,
// `-$5.00`, `-5.00 EUR`, `-500 JPY`, never `$-5.00`; and a zero-decimal currency is never divided by a hundred.
import { describe, expect, it } from 'vitest';
import { moneyText } from '../../src/interlock.js';

describe('moneyText of a negative amount', () => {
  it('puts the minus before the dollar sign', () => {
    expect(moneyText(-500, 'usd')).toBe('-$5.00');
    expect(moneyText(-500, 'USD')).toBe('-$5.00');
  });

  it('puts the minus before the number in every other currency, each in its own unit', () => {
    expect(moneyText(-500, 'eur')).toBe('-5.00 EUR');
    expect(moneyText(-500, 'jpy')).toBe('-500 JPY');
    expect(moneyText(-5_120, 'kwd')).toBe('-5.120 KWD');
    expect(moneyText(-500, null)).toBe('-500 (minor units, currency unknown)');
  });

  it('reads positive amounts and zero as before', () => {
    expect(moneyText(500, 'usd')).toBe('$5.00');
    expect(moneyText(500, 'jpy')).toBe('500 JPY');
    expect(moneyText(0, 'usd')).toBe('$0.00');
  });

  // Rule: an amount reads as money or as unknown, never `$NaN` or `$Infinity`, and a currency recorded empty (or not
  // three letters) is a currency unknown, not an unnamed two-decimal one (`7.00 `).
  it('reads no number as an amount not known, and an empty or odd currency as unknown', () => {
    expect(moneyText(Number.NaN, 'usd')).toBe('an amount not known');
    expect(moneyText(Number.POSITIVE_INFINITY, 'jpy')).toBe('an amount not known');
    expect(moneyText(700, '')).toBe('700 (minor units, currency unknown)');
    expect(moneyText(700, 'us dollars')).toBe('700 (minor units, currency unknown)');
  });
});
