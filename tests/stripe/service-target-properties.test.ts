// Rule: the target the service runs on (stripeSide: refunds and credits joined by targetByKind) says everything each
// Stripe target says about itself. A property one of them sets and the joined target drops is a rule the gate stops
// applying in the service while the tests of each target alone still pass: refusalProvesNothingLanded was dropped
// that way, so the service looked up a first send Stripe refused and took a refund labelled by hand with the effect's
// id for its landing.
import { expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { stripeSide } from '../../src/interlock.js';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import { createRefundTarget } from '../../src/stripe/refund-target.js';

it('the joined Stripe target carries every property both Stripe targets set, with their value where they agree', () => {
  const config = { ...loadConfig({}), stripeSecretKey: 'sk_test_joined', stripeApiBase: 'http://127.0.0.1:9' };
  const { client, target } = stripeSide(config);
  const parts = [createRefundTarget(client, { sendTimeoutMs: config.sendTimeoutMs }), createCreditTarget(client, { sendTimeoutMs: config.sendTimeoutMs, currency: config.creditCurrency })];
  const joined = target as unknown as Record<string, unknown>;
  for (const part of parts as unknown as Record<string, unknown>[]) {
    for (const [name, value] of Object.entries(part)) {
      expect(Object.hasOwn(joined, name), `the joined target drops ${name}`).toBe(true);
      const agreed = parts.every((other) => Object.is((other as unknown as Record<string, unknown>)[name], value));
      if (agreed && typeof value !== 'function' && typeof value !== 'object') expect(joined[name], name).toBe(value);
    }
  }
  expect(target.refusalProvesNothingLanded).toBe(true);
});
