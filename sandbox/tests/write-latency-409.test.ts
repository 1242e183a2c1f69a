// Rule: under `--delays stripe` a write takes time, as Stripe's does, and its Idempotency-Key is in flight all that
// time: of two overlapping sends under one key, one is answered 200 and the other 409 `idempotency_key_in_use`
// (stripe-facts §3), and the write happens once. `fast` keeps no write latency, so the suite's calls stay quick.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { delayProfiles } from '../core/delays.js';
import { pay, startHarness, stripeFor } from './helpers.js';
import type Stripe from 'stripe';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ delays: 'stripe' });
});
afterAll(() => h.sandbox.close());

describe('write latency under the stripe profile', () => {
  it('answers one of two overlapping refunds under one key with 409 idempotency_key_in_use, and refunds once', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    const noRetry = stripeFor(h.sandbox, { maxNetworkRetries: 0 });
    const send = () =>
      noRetry.refunds.create({ payment_intent: intent.id, amount: 1_000 }, { idempotencyKey: 'overlapping-sends' }).then(
        () => ({ status: 200, code: null }),
        (error: Stripe.errors.StripeError) => ({ status: error.statusCode ?? 0, code: error.code ?? null }),
      );
    // Fired together, as two workers racing on one effect would.
    const answers = await Promise.all([send(), send()]);
    expect(answers.sort((a, b) => a.status - b.status)).toEqual([
      { status: 200, code: null },
      { status: 409, code: 'idempotency_key_in_use' },
    ]);
    const refunds = await h.stripe.refunds.list({ payment_intent: intent.id });
    expect(refunds.data.map((refund) => refund.amount)).toEqual([1_000]);
  });

  it('keeps the fast profile free of write latency', () => {
    expect(delayProfiles.fast.writeLatency).toBe(0);
  });
});
