// The fault control and the request log (README "Control API"): what Stripe does on its bad days — a 429 from the
// rate limiter, a 500, a refused key, a connection that closes before or after the request ran — made to happen on
// demand, and every API request counted. Through the official SDK, as every client of the sandbox sees it.
import Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { expectStripeError, pay, sleep, startHarness, stripeFor } from './helpers.js';
import type { Harness } from './helpers.js';

let h: Harness;
let noRetry: Stripe;
beforeAll(async () => {
  h = await startHarness();
  noRetry = stripeFor(h.sandbox, { maxNetworkRetries: 0 });
});
afterAll(() => h.sandbox.close());
beforeEach(() => h.sandbox.control.clearFaults());

describe('10. injected faults and the request log', () => {
  it('answers a 429 with rate_limit_error and Retry-After before anything runs, and stores nothing under the key', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await h.sandbox.control.failNext({ path: '/v1/refunds', method: 'POST', status: 429, code: 'rate_limit', retry_after: 2 });
    const error = await expectStripeError(noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'fault-429' }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeRateLimitError);
    expect(error.statusCode).toBe(429);
    expect(error.headers?.['retry-after']).toBe('2');
    expect((await h.stripe.refunds.list({ payment_intent: intent.id })).data).toEqual([]);
    // The key was not stored: the same request now runs.
    const refund = await noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'fault-429' });
    expect(refund.lastResponse.headers['idempotent-replayed']).toBeUndefined();
  });

  it('a stored 500 (an error from inside the endpoint) is kept under the key: every retry with that key gets the same 500, replayed, until the key expires; another key runs', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await h.sandbox.control.failNext({ path: '/v1/refunds', method: 'POST', status: 500, stored: true });
    const first = await expectStripeError(noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'fault-500-stored' }));
    expect(first).toBeInstanceOf(Stripe.errors.StripeAPIError);
    expect(first.statusCode).toBe(500);
    const again = await expectStripeError(noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'fault-500-stored' }));
    expect(again.statusCode).toBe(500);
    expect(again.headers?.['idempotent-replayed']).toBe('true');
    expect(again.headers?.['original-request']).toBe(first.requestId);
    expect((await h.stripe.refunds.list({ payment_intent: intent.id })).data).toEqual([]);
    expect((await h.sandbox.control.requests()).filter((request) => request.idempotency_key === 'fault-500-stored').map((request) => request.fault)).toEqual(['fail_stored', null]);
    // Another key is another request; and once Stripe forgot the key, the same one runs.
    await expect(noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'fault-500-other' })).resolves.toMatchObject({ amount: 100 });
    await h.sandbox.control.ageIdempotencyKeys(24 * 3_600);
    await expect(noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'fault-500-stored' })).resolves.toMatchObject({ amount: 100 });
  });

  it('answers a 500 (api_error) or a 401 for the methods and paths named, count times, and then no more', async () => {
    await h.sandbox.control.failNext({ path: '/v1/refunds', method: 'GET', status: 500, count: 2 });
    await h.sandbox.control.failNext({ path: '/v1/customers', status: 401, message: 'Expired API Key provided: sk_test_****1234' });
    for (let i = 0; i < 2; i += 1) expect(await expectStripeError(noRetry.refunds.list())).toBeInstanceOf(Stripe.errors.StripeAPIError);
    await expect(noRetry.refunds.list()).resolves.toMatchObject({ object: 'list' });
    expect(await expectStripeError(noRetry.customers.list())).toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
    await expect(noRetry.customers.list()).resolves.toMatchObject({ object: 'list' });
  });

  it('drops a connection before the request runs: nothing happens, and the SDK sees a connection error', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    // Two drops: stripe-node retries a closed connection once even with maxNetworkRetries 0.
    await h.sandbox.control.dropNext({ path: '/v1/refunds', method: 'POST', when: 'before', count: 2 });
    const error = await expectStripeError(noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'drop-before' }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeConnectionError);
    expect((await h.stripe.refunds.list({ payment_intent: intent.id })).data).toEqual([]);
  });

  it('drops a connection after the request ran: it happened, and a retry under the same key gets the replay', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await h.sandbox.control.dropNext({ path: '/v1/refunds', method: 'POST', when: 'after', count: 2 });
    await expectStripeError(noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'drop-after' }));
    const [landed] = (await h.stripe.refunds.list({ payment_intent: intent.id })).data;
    expect(landed).toMatchObject({ amount: 100, status: 'succeeded' });
    const again = await noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'drop-after' });
    expect(again.id).toBe(landed?.id);
    expect(again.lastResponse.headers['idempotent-replayed']).toBe('true');
  });

  it('logs every API request in arrival order with its key, status and fault, and not the control routes', async () => {
    await h.sandbox.control.clearRequests();
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await h.sandbox.control.failNext({ path: '/v1/refunds', status: 429 });
    await expectStripeError(noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'logged-1' }));
    await noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'logged-1' });
    const log = await h.sandbox.control.requests();
    expect(log.map(({ method, path, status, fault, idempotency_key }) => ({ method, path, status, fault, idempotency_key }))).toEqual([
      { method: 'POST', path: '/v1/payment_intents', status: 200, fault: null, idempotency_key: expect.stringMatching(/^stripe-node-retry-/) },
      { method: 'POST', path: '/v1/refunds', status: 429, fault: 'fail', idempotency_key: 'logged-1' },
      { method: 'POST', path: '/v1/refunds', status: 200, fault: null, idempotency_key: 'logged-1' },
    ]);
    const [first] = log;
    expect(await h.sandbox.control.requests(first?.seq)).toHaveLength(2);
    expect(log.every((entry, i) => i === 0 || entry.at >= (log[i - 1]?.at ?? 0))).toBe(true);
  });

  it('still holds slow requests past a client timeout, and the request lands afterwards', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await h.sandbox.control.slowDown({ path: '/v1/refunds', ms: 300 });
    const error = await expectStripeError(noRetry.refunds.create({ payment_intent: intent.id, amount: 100 }, { timeout: 100 }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeConnectionError);
    await sleep(400);
    expect((await h.stripe.refunds.list({ payment_intent: intent.id })).data).toHaveLength(1);
  });
});
