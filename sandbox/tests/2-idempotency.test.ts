// Issue 3, point 2: idempotency exactly as stripe-facts §3.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStripeError, pay, raw, startHarness, stripeFor } from './helpers.js';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

const mismatch = (key: string): string =>
  `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`;

describe('2. idempotency', () => {
  it('replays the stored status and body with Idempotent-Replayed: true', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    const first = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 500 }, { idempotencyKey: 'replay-1' });
    const again = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 500 }, { idempotencyKey: 'replay-1' });
    expect(again.id).toBe(first.id);
    expect(first.lastResponse.headers['idempotent-replayed']).toBeUndefined();
    expect(again.lastResponse.headers['idempotent-replayed']).toBe('true');
    const refunds = await h.stripe.refunds.list({ payment_intent: intent.id });
    expect(refunds.data).toHaveLength(1);
  });

  it('replays a refusal the endpoint produced (a 400 is stored too)', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    const body = `payment_intent=${intent.id}&amount=20000`;
    const first = await raw(h.sandbox, 'POST', '/v1/refunds', { body, headers: { 'Idempotency-Key': 'stored-400' } });
    const again = await raw(h.sandbox, 'POST', '/v1/refunds', { body, headers: { 'Idempotency-Key': 'stored-400' } });
    expect(first.status).toBe(400);
    expect(again.status).toBe(400);
    expect(again.json).toEqual(first.json);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  it('refuses the same key with different parameters: 400 idempotency_error, StripeIdempotencyError', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await h.stripe.refunds.create({ payment_intent: intent.id, amount: 500 }, { idempotencyKey: 'changed-params' });
    const error = await expectStripeError(h.stripe.refunds.create({ payment_intent: intent.id, amount: 600 }, { idempotencyKey: 'changed-params' }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
    expect(error.statusCode).toBe(400);
    expect(error.rawType).toBe('idempotency_error');
    expect(error.message).toBe(mismatch('changed-params'));
  });

  it('keeps metadata keys that are numbers as they are, so other metadata under the same key is another request', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    const refund = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 100, metadata: { '42': 'order', '7': 'line' } }, { idempotencyKey: 'numeric-metadata' });
    expect(refund.metadata).toEqual({ '42': 'order', '7': 'line' });
    const error = await expectStripeError(h.stripe.refunds.create({ payment_intent: intent.id, amount: 100, metadata: { '9': 'order', '3': 'line' } }, { idempotencyKey: 'numeric-metadata' }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
    // An empty value unsets that key only.
    expect((await h.stripe.refunds.update(refund.id, { metadata: { '42': '' } })).metadata).toEqual({ '7': 'line' });
  });

  it('refuses the same key on a different endpoint', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await h.stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'other-endpoint' });
    const error = await expectStripeError(h.stripe.paymentIntents.create({ amount: 100, currency: 'usd' }, { idempotencyKey: 'other-endpoint' }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
    expect(error.message).toMatch(/^Keys for idempotent requests can only be used for the same endpoint they were first used for \('\/v1\/refunds' vs '\/v1\/payment_intents'\)/);
  });

  it('answers 409 idempotency_key_in_use while the first request is still running', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await h.sandbox.control.slowDown({ path: '/v1/refunds', ms: 300 });
    const noRetry = stripeFor(h.sandbox, { maxNetworkRetries: 0 });
    const first = noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'in-flight' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const error = await expectStripeError(noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'in-flight' }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeAPIError);
    expect(error.statusCode).toBe(409);
    expect(error.code).toBe('idempotency_key_in_use');
    await expect(first).resolves.toMatchObject({ status: 'succeeded' });
  });

  it('lets stripe-node retry a 409 and receive the replay of the first request', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await h.sandbox.control.slowDown({ path: '/v1/refunds', ms: 300 });
    const first = h.stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'retry-409' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'retry-409' });
    expect(second.id).toBe((await first).id);
    expect(second.lastResponse.headers['idempotent-replayed']).toBe('true');
  });

  it('does not store validation failures: the key runs afresh once the parameters are valid', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    const invalid = await expectStripeError(h.stripe.refunds.create({ payment_intent: intent.id, amount: 0 }, { idempotencyKey: 'validation' }));
    expect(invalid.code).toBe('parameter_invalid_integer');
    const valid = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 300 }, { idempotencyKey: 'validation' });
    expect(valid.amount).toBe(300);
    expect(valid.lastResponse.headers['idempotent-replayed']).toBeUndefined();
  });

  it('keeps keys 24 h: a key aged past the TTL runs a new request', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    const first = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'aged' });
    await h.sandbox.control.ageIdempotencyKeys(23 * 3600);
    const stillReplayed = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'aged' });
    expect(stillReplayed.id).toBe(first.id);
    await h.sandbox.control.ageIdempotencyKeys(3600);
    const fresh = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'aged' });
    expect(fresh.id).not.toBe(first.id);
  });

  it('makes the TTL configurable', async () => {
    await h.sandbox.control.configure({ idempotency_ttl_seconds: 60 });
    try {
      const { intent } = await pay(h.stripe, 'pm_card_visa');
      const first = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'short-ttl' });
      await h.sandbox.control.ageIdempotencyKeys(61);
      const fresh = await h.stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'short-ttl' });
      expect(fresh.id).not.toBe(first.id);
    } finally {
      await h.sandbox.control.configure({ idempotency_ttl_seconds: 86_400 });
    }
  });

  it('ignores Idempotency-Key on GET', async () => {
    const first = await raw(h.sandbox, 'GET', '/v1/events?limit=1', { headers: { 'Idempotency-Key': 'get-key' } });
    const second = await raw(h.sandbox, 'GET', '/v1/events?limit=2', { headers: { 'Idempotency-Key': 'get-key' } });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
  });
});
