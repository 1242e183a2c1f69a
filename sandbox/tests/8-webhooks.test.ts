// Issue 3, point 8: signed, at-least-once webhook delivery, and the control API that bends it for tests.
import Stripe from 'stripe';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { delayProfiles } from '../core/delays.js';
import { API_VERSION } from '../core/event-bus.js';
import { startSandbox } from '../index.js';
import { eventually, expectStripeError, pay, startHarness, startReceiver, stripeFor } from './helpers.js';
import type { Harness, Receiver } from './helpers.js';

let h: Harness;
let receiver: Receiver;
let secret: string;
let endpoint: string;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());
beforeEach(async () => {
  await h.sandbox.control.reset();
  receiver = await startReceiver();
  const created = await h.stripe.webhookEndpoints.create({ url: receiver.url, enabled_events: ['payment_intent.created', 'charge.refunded', 'refund.created', 'refund.updated', 'refund.failed'] });
  secret = created.secret ?? '';
  endpoint = created.id;
});
afterEach(() => receiver.close());

const paymentIntentCreated = async (): Promise<string> => (await h.stripe.paymentIntents.create({ amount: 500, currency: 'usd' })).id;

describe('8. webhooks', () => {
  it('registers endpoints with a whsec_ secret shown only on creation, and lists them', async () => {
    expect(secret).toMatch(/^whsec_/);
    const listed = await h.stripe.webhookEndpoints.list();
    expect(listed.data.map((e) => e.id)).toEqual([endpoint]);
    expect(listed.data[0]).toMatchObject({ url: receiver.url, status: 'enabled' });
    expect(listed.data[0]!.secret).toBeUndefined();
  });

  it('refuses an endpoint api_version other than its own (it renders events at one version only) and accepts its own', async () => {
    const older = await expectStripeError(h.stripe.webhookEndpoints.create({ url: receiver.url, enabled_events: ['customer.created'], api_version: '2024-06-20' }));
    expect(older).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(older).toMatchObject({ statusCode: 400, type: 'StripeInvalidRequestError', param: 'api_version' });
    expect(older.message).toContain(API_VERSION);
    expect(older.message).toContain('2024-06-20');
    const own = await h.stripe.webhookEndpoints.create({ url: receiver.url, enabled_events: ['customer.created'], api_version: API_VERSION as Stripe.WebhookEndpointCreateParams.ApiVersion });
    expect(own.api_version).toBe(API_VERSION);
    expect((await h.stripe.webhookEndpoints.list()).data.map((e) => e.id)).toEqual([own.id, endpoint]);
  });

  it('signs each delivery so stripe.webhooks.constructEvent accepts it (t=…,v1=…,v0=… over the raw body)', async () => {
    const id = await paymentIntentCreated();
    await eventually(async () => receiver.received.length, (n) => n === 1);
    const [delivery] = receiver.received;
    expect(delivery!.headers['stripe-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64},v0=[0-9a-f]{64}$/);
    expect(delivery!.headers['content-type']).toBe('application/json; charset=utf-8');
    const event = h.stripe.webhooks.constructEvent(delivery!.body, String(delivery!.headers['stripe-signature']), secret);
    expect(event.type).toBe('payment_intent.created');
    expect((event.data.object as Stripe.PaymentIntent).id).toBe(id);
    expect(() => h.stripe.webhooks.constructEvent(delivery!.body, String(delivery!.headers['stripe-signature']), 'whsec_wrong')).toThrow(Stripe.errors.StripeSignatureVerificationError);
  });

  it('delivers only the enabled event types', async () => {
    const { charge } = await pay(h.stripe, 'pm_card_visa');
    await h.stripe.refunds.create({ charge, amount: 100 });
    expect(await h.sandbox.control.idle()).toBe(true);
    // In any order: an endpoint gets up to four deliveries at once (webhookConcurrency), as Stripe promises none.
    expect(receiver.received.map((r) => r.event.type).sort()).toEqual(['charge.refunded', 'payment_intent.created', 'refund.created']);
  });

  it('retries a non-2xx answer with backoff until delivered, and the control API lists the attempts', async () => {
    receiver.respond = (n) => ({ status: n < 2 ? 500 : 200 });
    await paymentIntentCreated();
    await eventually(async () => receiver.received.length, (n) => n === 1);
    const [delivery] = await h.sandbox.control.deliveries({ endpoint });
    expect(delivery!.state).toBe('delivered');
    expect(delivery!.attempts.map((a) => a.status)).toEqual([500, 500, 200]);
    // Retry n waits at least the base times 2^(n-1) (a timer may fire a millisecond early by the wall clock; a busy
    // machine only makes the waits longer).
    const base = delayProfiles.fast.webhookRetryBase;
    const gaps = delivery!.attempts.slice(1).map((attempt, index) => attempt.at - delivery!.attempts[index]!.at);
    gaps.forEach((gap, index) => expect(gap, `retry ${index + 1}`).toBeGreaterThanOrEqual(base * 2 ** index - 2));
  });

  it('retries after a timeout', async () => {
    await h.sandbox.control.configure({ webhook_timeout_ms: 100 });
    receiver.respond = (n) => ({ status: 200, delayMs: n === 0 ? 400 : 0 });
    await paymentIntentCreated();
    await eventually(() => h.sandbox.control.deliveries({ endpoint }), (list) => list[0]?.state === 'delivered');
    const [delivery] = await h.sandbox.control.deliveries({ endpoint });
    expect(delivery!.attempts[0]!.error).not.toBeNull();
    expect(delivery!.attempts.at(-1)!.status).toBe(200);
  });

  it('gives up after the configured retries and marks the delivery failed; pending_webhooks stays counted', async () => {
    await h.sandbox.control.configure({ webhook_max_retries: 2 });
    receiver.respond = () => ({ status: 503 });
    await paymentIntentCreated();
    const [failed] = await eventually(() => h.sandbox.control.deliveries({ endpoint }), (list) => list[0]?.state === 'failed');
    expect(failed!.attempts).toHaveLength(3);
    expect((await h.stripe.events.retrieve(failed!.event)).pending_webhooks).toBe(1);
  });

  it('duplicate rule: the same event arrives twice', async () => {
    await h.sandbox.control.addRule({ action: 'duplicate', type: 'payment_intent.created' });
    await paymentIntentCreated();
    await eventually(async () => receiver.received.length, (n) => n === 2);
    expect(receiver.received[0]!.event.id).toBe(receiver.received[1]!.event.id);
  });

  it('hold + release reverse: events arrive out of order, deterministically', async () => {
    await h.sandbox.control.addRule({ action: 'hold', count: 3 });
    const { charge } = await pay(h.stripe, 'pm_card_visa');
    await h.stripe.refunds.create({ charge, amount: 100 });
    expect(receiver.received).toHaveLength(0);
    const released = await h.sandbox.control.release('reverse');
    expect(released.map((d) => d.type)).toEqual(['charge.refunded', 'refund.created', 'payment_intent.created']);
    await eventually(async () => receiver.received.length, (n) => n === 3);
    expect(receiver.received.map((r) => r.event.type)).toEqual(['charge.refunded', 'refund.created', 'payment_intent.created']);
  });

  it('delay rule: a delivery waits the given time while later events overtake it', async () => {
    await h.sandbox.control.addRule({ action: 'delay', type: 'payment_intent.created', delay_ms: 150 });
    const { charge } = await pay(h.stripe, 'pm_card_visa');
    await h.stripe.refunds.create({ charge, amount: 100 });
    await eventually(async () => receiver.received.length, (n) => n === 3);
    // The two later events overtake it, in either order between themselves (deliveries to an endpoint overlap).
    const types = receiver.received.map((r) => r.event.type);
    expect({ last: types[2], overtaking: types.slice(0, 2).sort() }).toEqual({ last: 'payment_intent.created', overtaking: ['charge.refunded', 'refund.created'] });
  });

  it('drop rule: the delivery is lost until redelivered through the control API', async () => {
    await h.sandbox.control.addRule({ action: 'drop', type: 'payment_intent.created' });
    await paymentIntentCreated();
    expect(await h.sandbox.control.idle()).toBe(true);
    expect(receiver.received).toHaveLength(0);
    const [dropped] = await h.sandbox.control.deliveries({ state: 'dropped' });
    await h.sandbox.control.redeliver(dropped!.id);
    await eventually(async () => receiver.received.length, (n) => n === 1);
    expect(receiver.received[0]!.event.id).toBe(dropped!.event);
  });

  it('--forward-to: every event is POSTed to the URL, signed with the given secret', async () => {
    const forwarded = await startReceiver();
    const sandbox = await startSandbox({ port: 0, delays: 'fast', forwardTo: forwarded.url, webhookSecret: 'whsec_fixed_for_test' });
    try {
      expect(sandbox.webhookSecret).toBe('whsec_fixed_for_test');
      const stripe = stripeFor(sandbox);
      await pay(stripe, 'pm_card_visa');
      await eventually(async () => forwarded.received.length, (n) => n === 3);
      const types = forwarded.received.map((r) => stripe.webhooks.constructEvent(r.body, String(r.headers['stripe-signature']), 'whsec_fixed_for_test').type);
      expect(types.sort()).toEqual(['charge.succeeded', 'payment_intent.created', 'payment_intent.succeeded']);
    } finally {
      await sandbox.close();
      await forwarded.close();
    }
  });

  it('--forward-to without a secret generates one and reports it', async () => {
    const sandbox = await startSandbox({ port: 0, delays: 'fast', forwardTo: 'http://127.0.0.1:9/none' });
    expect(sandbox.webhookSecret).toMatch(/^whsec_/);
    await sandbox.close();
  });

  it('signs every `stripe listen` session with --listen-secret when it is given (a fixed deployment), and with one secret per CLI otherwise', async () => {
    const fixed = await startSandbox({ port: 0, delays: 'fast', listenSecret: 'whsec_fixedforcompose' });
    const open = async (sandbox: typeof fixed, key: string, device: string) =>
      ((await stripeFor(sandbox, {}, key).rawRequest('POST', '/v1/stripecli/sessions', { device_name: device, websocket_features: ['webhooks'] })) as unknown as { secret: string }).secret;
    expect(await open(fixed, 'sk_test_a', 'one')).toBe('whsec_fixedforcompose');
    expect(await open(fixed, 'sk_test_b', 'two')).toBe('whsec_fixedforcompose');
    await fixed.close();
    const own = await startSandbox({ port: 0, delays: 'fast' });
    const [a, b] = [await open(own, 'sk_test_a', 'one'), await open(own, 'sk_test_b', 'two')];
    expect(a).toMatch(/^whsec_/);
    expect(b).not.toBe(a);
    await own.close();
  });
});
