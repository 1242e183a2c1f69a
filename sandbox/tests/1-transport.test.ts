// Issue 3, point 1: transport. Raw HTTP where the point is the wire format; the SDK where it is the error class.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStripeError, pay, raw, startHarness, stripeFor } from './helpers.js';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

describe('1. transport', () => {
  it('decodes a[b] nesting, a[0] indexed arrays and a[]= arrays, raw or percent-encoded', async () => {
    const indexed = await raw(h.sandbox, 'POST', '/v1/payment_intents', {
      body: 'amount=500&currency=usd&metadata[order]=42&payment_method_types[0]=card&automatic_payment_methods=',
    });
    expect(indexed.status).toBe(200);
    expect(indexed.json['metadata']).toEqual({ order: '42' });
    expect(indexed.json['payment_method_types']).toEqual(['card']);
    const appended = await raw(h.sandbox, 'POST', '/v1/payment_intents', {
      body: 'amount=500&currency=usd&metadata%5Border%5D=43&payment_method_types%5B%5D=card',
    });
    expect(appended.status).toBe(200);
    expect(appended.json['metadata']).toEqual({ order: '43' });
    expect(appended.json['payment_method_types']).toEqual(['card']);
  });

  it('reads GET parameters from the query string', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await h.stripe.refunds.create({ payment_intent: intent.id, amount: 100 });
    await h.stripe.refunds.create({ payment_intent: intent.id, amount: 100 });
    const listed = await raw(h.sandbox, 'GET', `/v1/refunds?payment_intent=${intent.id}&limit=1`);
    expect(listed.json['data']).toHaveLength(1);
    expect(listed.json['has_more']).toBe(true);
  });

  it('sends Request-Id on every response: success, refusal, unknown route and missing key', async () => {
    const responses = [
      await raw(h.sandbox, 'GET', '/v1/events'),
      await raw(h.sandbox, 'GET', '/v1/charges/ch_missing'),
      await raw(h.sandbox, 'GET', '/v1/nothing_here'),
      await raw(h.sandbox, 'GET', '/v1/events', { headers: { Authorization: '' } }),
    ];
    for (const response of responses) expect(response.headers.get('request-id')).toMatch(/^req_/);
    const charge = await h.stripe.charges.list({ limit: 1 });
    expect(charge.lastResponse.requestId).toMatch(/^req_/);
  });

  it('answers a missing object with 404 resource_missing, which the SDK raises as StripeInvalidRequestError', async () => {
    const error = await expectStripeError(h.stripe.charges.retrieve('ch_missing'));
    expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(error.statusCode).toBe(404);
    expect(error.code).toBe('resource_missing');
    expect(error.param).toBe('id');
    expect(error.message).toBe("No such charge: 'ch_missing'");
    expect(error.doc_url).toBe('https://stripe.com/docs/error-codes/resource-missing');
    expect(error.requestId).toMatch(/^req_/);
  });

  it('uses the error envelope {error: {type, code, param, message, doc_url}}', async () => {
    const response = await raw(h.sandbox, 'POST', '/v1/refunds', { body: 'charge=ch_missing' });
    expect(response.status).toBe(404);
    expect(response.json['error']).toMatchObject({
      type: 'invalid_request_error',
      code: 'resource_missing',
      message: "No such charge: 'ch_missing'",
      doc_url: 'https://stripe.com/docs/error-codes/resource-missing',
    });
  });

  it('refuses unknown parameters with parameter_unknown, top level and nested', async () => {
    const top = await expectStripeError(h.stripe.refunds.create({ charge: 'ch_x', colour: 'red' } as Stripe.RefundCreateParams));
    expect(top).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(top.code).toBe('parameter_unknown');
    expect(top.param).toBe('colour');
    expect(top.message).toBe('Received unknown parameter: colour');
    const nested = await raw(h.sandbox, 'POST', '/v1/disputes/du_x', { body: 'evidence[favourite_colour]=red' });
    expect(nested.json['error']).toMatchObject({ code: 'parameter_unknown', param: 'evidence[favourite_colour]' });
  });

  it('refuses a missing required parameter with parameter_missing', async () => {
    const error = await expectStripeError(h.stripe.paymentIntents.create({ currency: 'usd' } as Stripe.PaymentIntentCreateParams));
    expect(error.code).toBe('parameter_missing');
    expect(error.param).toBe('amount');
  });

  it('answers a request without a key with Stripe’s 401, raised as StripeAuthenticationError', async () => {
    const response = await raw(h.sandbox, 'GET', '/v1/events', { headers: { Authorization: '' } });
    expect(response.status).toBe(401);
    expect((response.json['error'] as { message: string }).message).toMatch(/^You did not provide an API key/);
    const error = await expectStripeError(stripeFor(h.sandbox, {}, 'not_a_key').events.list());
    expect(error).toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
    expect(error.statusCode).toBe(401);
    expect(error.message).toMatch(/^Invalid API Key provided: /);
  });

  it('refuses a live-mode key and masks it in the message', async () => {
    const error = await expectStripeError(stripeFor(h.sandbox, {}, 'sk_live_abcdefgh1234').events.list());
    expect(error).toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
    expect(error.message).toBe('Invalid API Key provided: sk_live_********1234');
  });

  it('accepts any sk_test_ key, by Bearer or by HTTP Basic auth', async () => {
    await expect(stripeFor(h.sandbox, {}, 'sk_test_someone_else_123').events.list()).resolves.toMatchObject({ object: 'list' });
    const basic = Buffer.from('sk_test_basic:').toString('base64');
    const response = await raw(h.sandbox, 'GET', '/v1/events?limit=1', { headers: { Authorization: `Basic ${basic}` } });
    expect(response.status).toBe(200);
  });

  it('answers an unknown URL with 404 Unrecognized request URL', async () => {
    const response = await raw(h.sandbox, 'POST', '/v1/teleports');
    expect(response.status).toBe(404);
    expect((response.json['error'] as { message: string }).message).toMatch(/^Unrecognized request URL \(POST: \/v1\/teleports\)/);
  });

  it('raises a declined card as StripeCardError (402) with the decline code', async () => {
    const error = await expectStripeError(pay(h.stripe, 'pm_card_chargeDeclined'));
    expect(error).toBeInstanceOf(Stripe.errors.StripeCardError);
    expect(error.statusCode).toBe(402);
    expect(error.code).toBe('card_declined');
    expect(error.decline_code).toBe('generic_decline');
  });

  it('echoes Stripe-Version and Idempotency-Key response headers', async () => {
    const response = await raw(h.sandbox, 'POST', '/v1/payment_intents', {
      body: 'amount=500&currency=usd',
      headers: { 'Idempotency-Key': 'echo-me', 'Stripe-Version': '2026-10-28.endive' },
    });
    expect(response.headers.get('idempotency-key')).toBe('echo-me');
    expect(response.headers.get('stripe-version')).toBe('2026-10-28.endive');
  });

  it('expands ids into objects with expand[]', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    const expanded = await h.stripe.paymentIntents.retrieve(intent.id, { expand: ['latest_charge'] });
    expect((expanded.latest_charge as Stripe.Charge).object).toBe('charge');
  });
});
