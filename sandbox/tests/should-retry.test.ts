// Rule: Stripe tells its SDKs whether to resend with `Stripe-Should-Retry`, and stripe-node obeys it before its own
// rules (stripe-facts §1.2: "obey `stripe-should-retry: false|true`"; RequestSender._shouldRetry, whose comment expects
// the header "to be false in most cases when a 500 is returned, since our idempotency framework would typically replay
// it anyway"). So a replayed stored 5xx says `false`: a resend under the key can only hear it again. And a 429
// `lock_timeout` (another request holds the object) says `true`: it is the one 429 worth resending, and stripe-node
// retries a 429 only when told to. A rate-limit 429 and a replayed 4xx say nothing, as before. The sandbox used to send
// neither header, so the SDK's default retries spent two more requests on every replayed 500 and none on a lock timeout.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStripeError, pay, raw, startHarness, stripeFor } from './helpers.js';
import type { Harness } from './helpers.js';

let h: Harness;
let noRetry: Stripe;
beforeAll(async () => {
  h = await startHarness();
  noRetry = stripeFor(h.sandbox, { maxNetworkRetries: 0 });
});
afterAll(() => h.sandbox.close());

const sentUnder = async (key: string) => (await h.sandbox.control.requests()).filter((request) => request.idempotency_key === key);

describe('sandbox: Stripe-Should-Retry', () => {
  it('answers a replayed stored 500 with Stripe-Should-Retry: false, so stripe-node sends it once', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await h.sandbox.control.failNext({ path: '/v1/refunds', method: 'POST', status: 500, stored: true });
    const first = await expectStripeError(noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'should-retry-500' }));
    expect(first.statusCode).toBe(500);
    expect(first.headers?.['stripe-should-retry']).toBeUndefined();
    const replay = await expectStripeError(noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'should-retry-500' }));
    expect(replay).toBeInstanceOf(Stripe.errors.StripeAPIError);
    expect(replay.headers).toMatchObject({ 'idempotent-replayed': 'true', 'stripe-should-retry': 'false' });

    // With the SDK's default two retries, a request under the key is sent once: it would only hear the 500 again.
    await expectStripeError(h.stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'should-retry-500' }));
    expect((await sentUnder('should-retry-500')).map((request) => request.status)).toEqual([500, 500, 500]);
    expect((await h.stripe.refunds.list({ payment_intent: intent.id })).data).toEqual([]);
  });

  it('says nothing on a replayed 400, which the SDK does not resend anyway', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    const body = `payment_intent=${intent.id}&amount=20000`;
    await raw(h.sandbox, 'POST', '/v1/refunds', { body, headers: { 'Idempotency-Key': 'should-retry-400' } });
    const again = await raw(h.sandbox, 'POST', '/v1/refunds', { body, headers: { 'Idempotency-Key': 'should-retry-400' } });
    expect(again.status).toBe(400);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('stripe-should-retry')).toBeNull();
  });

  it('answers an injected 429 lock_timeout with Stripe-Should-Retry: true, so stripe-node resends it and the request runs', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    const lockTimeout = { path: '/v1/refunds', method: 'POST', status: 429, code: 'lock_timeout', message: 'This object cannot be accessed right now because another API request or Stripe process is currently accessing it.' } as const;
    await h.sandbox.control.failNext(lockTimeout);
    const once = await expectStripeError(noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'should-retry-lock-once' }));
    expect(once).toMatchObject({ statusCode: 429, code: 'lock_timeout' });
    expect(once.headers?.['stripe-should-retry']).toBe('true');

    await h.sandbox.control.failNext(lockTimeout);
    const refund = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'should-retry-lock' });
    expect(refund).toMatchObject({ object: 'refund', amount: 100 });
    expect((await sentUnder('should-retry-lock')).map((request) => [request.fault, request.status])).toEqual([['fail', 429], [null, 200]]);
  });

  it('says nothing on a rate-limit 429, which stripe-node does not resend', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await h.sandbox.control.failNext({ path: '/v1/refunds', method: 'POST', status: 429, code: 'rate_limit', message: 'Too many requests hit the API too quickly.' });
    const limited = await expectStripeError(h.stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'should-retry-rate' }));
    expect(limited).toBeInstanceOf(Stripe.errors.StripeRateLimitError);
    expect(limited.headers?.['stripe-should-retry']).toBeUndefined();
    expect(await sentUnder('should-retry-rate')).toHaveLength(1);
  });
});
