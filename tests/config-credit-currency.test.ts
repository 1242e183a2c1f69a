// Rule: INTERLOCK_CREDIT_CURRENCY is a currency Stripe supports (a lowercase ISO 4217 code Stripe takes in a customer
// balance transaction), or the service does not start: a typo such as `uds` is three lowercase letters, so it used to
// pass, and showed only later, as every credit refused by Stripe after its dispatch. The refusal names the variable,
// the value given and examples of good ones; an upper-case code Stripe supports is told to be written in lowercase.
// src/ keeps its own list of Stripe's currencies (src/ and sandbox/ import nothing from each other): the sandbox's (a US
// account's), so the sandbox takes every credit such a configuration names, and the three-decimal currencies Stripe
// takes from accounts in their regions, which the gate writes in thousandths (src/core/money-text.ts).
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, STRIPE_CURRENCIES } from '../src/config.js';
import { SUPPORTED_CURRENCIES } from '../sandbox/core/money.js';

function refusal(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('INTERLOCK_CREDIT_CURRENCY', () => {
  it('refuses a three-letter code that is not a currency Stripe supports, naming the value and giving examples', () => {
    for (const typo of ['uds', 'xyz', 'eru']) {
      const { message } = refusal({ INTERLOCK_CREDIT_CURRENCY: typo });
      expect(message).toContain(`INTERLOCK_CREDIT_CURRENCY: "${typo}" is not an ISO 4217 currency code Stripe supports`);
      expect(message).toContain('such as usd, eur, gbp or jpy');
    }
  });

  it('tells an upper-case code Stripe supports to be written in lowercase', () => {
    expect(refusal({ INTERLOCK_CREDIT_CURRENCY: 'EUR' }).message).toContain('INTERLOCK_CREDIT_CURRENCY: "EUR" must be written in lowercase, as eur');
  });

  it('refuses what is not a code at all by name too', () => {
    for (const bad of ['euro', 'e1r', '$', 'usd ']) expect(refusal({ INTERLOCK_CREDIT_CURRENCY: bad }).message).toContain(`INTERLOCK_CREDIT_CURRENCY: ${JSON.stringify(bad)}`);
  });

  it('takes every currency Stripe supports, usd when unset', () => {
    expect(loadConfig({}).creditCurrency).toBe('usd');
    for (const code of STRIPE_CURRENCIES) expect(loadConfig({ INTERLOCK_CREDIT_CURRENCY: code }).creditCurrency).toBe(code);
  });

  it("holds the sandbox's currencies and the three-decimal ones, lowercase three-letter codes", () => {
    expect([...STRIPE_CURRENCIES].sort()).toEqual([...SUPPORTED_CURRENCIES, 'bhd', 'jod', 'kwd', 'omr', 'tnd'].sort());
    expect(loadConfig({ INTERLOCK_CREDIT_CURRENCY: 'kwd' }).creditCurrency).toBe('kwd');
    expect(STRIPE_CURRENCIES.every((code) => /^[a-z]{3}$/.test(code))).toBe(true);
  });
});
