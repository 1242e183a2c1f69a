// The webhook route and the facts worker under what Stripe's delivery really does and what anyone can post
// (issue 10 §6): deliveries duplicated, delayed, reordered and dropped-then-redelivered (the sandbox's delivery
// rules) end in the same final answer with no fact recorded twice, with or without the re-read before recording;
// a stale timestamp, a bad signature, a secret in rotation, a body over the limit, a body that is no JSON, an
// unknown event type and a queue that cannot take the event each get their own answer; and a fuzz of bodies and
// headers never draws a 5xx nor adds a fact.
import fc from 'fast-check';
import express from 'express';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookVerifier, signWebhookBody, FACT_EVENTS } from '../../src/interlock.js';
import { stripeWebhookRouter } from '../../webhooks/stripe-route.js';
import { answerOf, newSecret, pay, startFactsRig, type FactsRig } from './facts-rig.js';

let rig: FactsRig;
let plain: FactsRig;

beforeAll(async () => {
  [rig, plain] = await Promise.all([startFactsRig(), startFactsRig({ reread: false })]);
}, 60_000);

afterAll(async () => {
  await Promise.all([rig?.close(), plain?.close()]);
});

type Delivery = 'in order' | 'duplicated' | 'delayed' | 'reversed' | 'dropped, then redelivered';

/**
 * Under the delivery rule: a committed $20 refund, then the refund fails at Stripe and the charge is charged
 * back. Returns the effect's settled answer and its OBSERVED entries.
 */
async function afterFailureAndChargeback(on: FactsRig, delivery: Delivery) {
  const { paymentIntent, charge } = await pay(on.stripe, 'pm_card_visa', 10_000);
  await on.sandbox.control.idle();
  // The rule takes every event from the refund's creation on: reversed, the failure arrives before the success.
  const rule = { 'in order': null, duplicated: { action: 'duplicate', copies: 3 }, delayed: { action: 'delay', delay_ms: 300 }, reversed: { action: 'hold' }, 'dropped, then redelivered': { action: 'drop' } } as const;
  const chosen = rule[delivery];
  if (chosen !== null) await on.sandbox.control.addRule({ ...chosen, count: 1_000 });
  const effectId = await on.refund(paymentIntent, 2_000);
  await on.until(effectId, (v) => v.finalMoney.status === 'returned');
  const refund = (await on.stripe.refunds.list({ payment_intent: paymentIntent })).data[0];
  if (refund === undefined) throw new Error('no refund at Stripe');
  await on.sandbox.control.request('POST', `/refunds/${refund.id}/fail`, { failure_reason: 'expired_or_canceled_card' });
  await on.sandbox.control.openDispute({ charge, kind: 'chargeback' });
  if (delivery === 'reversed') await on.sandbox.control.release('reverse');
  await on.sandbox.control.idle();
  if (delivery === 'dropped, then redelivered') {
    // Nothing reached the route: the receipt still says returned, until Stripe delivers again.
    expect(answerOf(await on.receipt(effectId)).status).toBe('returned');
    await on.sandbox.control.clearRules();
    await on.sandbox.control.redeliver();
    await on.sandbox.control.idle();
  }
  await on.sandbox.control.clearRules();
  await on.until(effectId, (v) => v.finalMoney.status === 'not_returned' && v.finalMoney.disputes.length > 0);
  await on.drained();
  const deliveries = await on.sandbox.control.deliveries();
  return { effectId, answer: answerOf(await on.receipt(effectId)), observed: await on.observed(effectId), deliveries };
}

const DELIVERIES: Delivery[] = ['in order', 'duplicated', 'delayed', 'reversed', 'dropped, then redelivered'];

describe('deliveries as Stripe makes them', () => {
  for (const [name, pick] of [['re-reading each object before recording it', () => rig], ['recording each event as it came (no re-read)', () => plain]] as const) {
    it(`the same final answer however the events come, and no fact recorded twice (${name})`, async () => {
      const on = pick();
      const answers: unknown[] = [];
      for (const delivery of DELIVERIES) {
        const { answer, observed, deliveries } = await afterFailureAndChargeback(on, delivery);
        answers.push(answer);
        // Each fact once: no two OBSERVED entries say the same thing about the same object.
        const said = observed.map((entry) => `${entry.objectId}:${entry.status}`);
        expect(new Set(said).size, `${delivery}: ${said.join(', ')}`).toBe(said.length);
        expect(observed.some((entry) => entry.status === 'failed'), delivery).toBe(true);
        // Every delivery the route answered was a success: nothing made Stripe retry.
        for (const delivery of deliveries) for (const attempt of delivery.attempts) if (attempt.status !== null) expect(attempt.status).toBe(200);
      }
      expect(answers[0]).toEqual({ happened: true, status: 'not_returned', failureReason: 'expired_or_canceled_card', refunds: ['failed'], disputes: ['needs_response'], exposure: null, answerMatchesFinalMoney: false });
      for (const answer of answers) expect(answer).toEqual(answers[0]);
    }, 90_000);
  }
});

const post = (on: FactsRig, body: string | Buffer, headers: Record<string, string>) => fetch(on.webhookUrl, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

const eventBody = (type: string, id = `evt_${Math.random().toString(36).slice(2)}`) => JSON.stringify({ id, object: 'event', type, created: Math.floor(Date.now() / 1000), data: { object: { id: 're_none', object: 'refund', status: 'succeeded', amount: 100, metadata: {} } } });

describe('what anyone can post', () => {
  it('refuses a missing signature, a bad one and a stale timestamp with 400 and a reason; nothing is queued', async () => {
    const body = eventBody('refund.updated');
    const id = (JSON.parse(body) as { id: string }).id;
    const missing = await post(rig, body, {});
    const bad = await post(rig, body, { 'stripe-signature': signWebhookBody(body, newSecret()) });
    const stale = await post(rig, body, { 'stripe-signature': signWebhookBody(body, rig.forwardSecret, Math.floor(Date.now() / 1000) - 600) });
    expect([missing.status, bad.status, stale.status]).toEqual([400, 400, 400]);
    expect([(await missing.json()) as unknown, (await bad.json()) as unknown, (await stale.json()) as unknown]).toEqual([
      { error: { code: 'missing_signature', message: expect.any(String) } },
      { error: { code: 'bad_signature', message: expect.stringContaining('STRIPE_WEBHOOK_SECRET') } },
      { error: { code: 'stale_timestamp', message: expect.stringContaining('600 s') } },
    ]);
    expect(await rig.factsQueue.queue.getJob(id)).toBeUndefined();
  });

  it('during a rotation both secrets verify; once the old one is dropped, its signatures are refused', async () => {
    const next = newSecret();
    try {
      rig.useSecrets([rig.forwardSecret, next]);
      expect((await post(rig, eventBody('refund.updated'), { 'stripe-signature': signWebhookBody(eventBody('x'), next) })).status).toBe(400);
      const byOld = eventBody('refund.updated');
      const byNew = eventBody('refund.updated');
      expect((await post(rig, byOld, { 'stripe-signature': signWebhookBody(byOld, rig.forwardSecret) })).status).toBe(200);
      expect((await post(rig, byNew, { 'stripe-signature': signWebhookBody(byNew, next) })).status).toBe(200);
      rig.useSecrets([next]);
      const late = eventBody('refund.updated');
      const refused = await post(rig, late, { 'stripe-signature': signWebhookBody(late, rig.forwardSecret) });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('bad_signature');
    } finally {
      rig.useSecrets([rig.forwardSecret]);
    }
  });

  it('a body over the limit is 413, a signed body that is no JSON or no event is 400, an unknown event type is acknowledged and not queued', async () => {
    const huge = JSON.stringify({ id: 'evt_huge', object: 'event', type: 'refund.updated', data: { object: { padding: 'x'.repeat(600 * 1024) } } });
    const tooLarge = await post(rig, huge, { 'stripe-signature': signWebhookBody(huge, rig.forwardSecret) });
    expect(tooLarge.status).toBe(413);
    expect(((await tooLarge.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
    const notJson = 'refund.updated, but not as JSON';
    const answer = await post(rig, notJson, { 'stripe-signature': signWebhookBody(notJson, rig.forwardSecret) });
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('not_an_event');
    const notEvent = JSON.stringify({ id: 'evt_x', type: 'refund.updated' });
    expect((await post(rig, notEvent, { 'stripe-signature': signWebhookBody(notEvent, rig.forwardSecret) })).status).toBe(400);
    const unknown = eventBody('invoice.paid');
    const ignored = await post(rig, unknown, { 'stripe-signature': signWebhookBody(unknown, rig.forwardSecret) });
    expect(ignored.status).toBe(200);
    expect(await ignored.json()).toEqual({ received: true, ignored: true });
    expect(await rig.factsQueue.queue.getJob((JSON.parse(unknown) as { id: string }).id)).toBeUndefined();
  });

  it('a signed body nested deeper than any Stripe event is 400 not_an_event (it could never be queued, so no 503 for Stripe to retry), and at the queue it is refused alone, not with the events accepted beside it', async () => {
    const nested = (id: string, depth: number) => JSON.stringify({ id, object: 'event', type: 'refund.updated', created: 1, data: { object: { id: 're_nested', object: 'refund', metadata: {}, x: 0 } } }).replace('"x":0', `"x":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`);
    const deep = nested('evt_nested_deep', 20_000);
    expect(deep.length).toBeLessThan(512 * 1024);
    const refused = await post(rig, deep, { 'stripe-signature': signWebhookBody(deep, rig.forwardSecret) });
    expect(refused.status).toBe(400);
    const problem = ((await refused.json()) as { error: { code: string; message: string } }).error;
    expect(problem).toMatchObject({ code: 'not_an_event', message: expect.stringContaining('deeper than 64 levels') });
    // A Stripe-sized nesting is taken as before.
    const shallow = nested('evt_nested_shallow', 40);
    expect((await post(rig, shallow, { 'stripe-signature': signWebhookBody(shallow, rig.forwardSecret) })).status).toBe(200);
    // Accepted in one turn, the two would share a batch: only the deep one is refused.
    const [deepAnswer, plainAnswer] = await Promise.allSettled([rig.factsQueue.accept(JSON.parse(nested('evt_nested_deep2', 20_000))), rig.factsQueue.accept(JSON.parse(eventBody('refund.updated')))]);
    expect(deepAnswer).toMatchObject({ status: 'rejected', reason: { code: 'invalid_request' } });
    expect(plainAnswer).toMatchObject({ status: 'fulfilled' });
  });

  it('a verified event the queue cannot take is 503, so Stripe delivers it again', async () => {
    const secret = newSecret();
    const app = express().use(stripeWebhookRouter({ verify: createWebhookVerifier([secret]), accept: () => Promise.reject(new Error('Redis is unreachable')) }));
    const body = eventBody('refund.failed');
    const answer = await request(app).post('/webhooks/stripe').set('stripe-signature', signWebhookBody(body, secret)).set('content-type', 'application/json').send(body);
    expect(answer.status).toBe(503);
    expect(answer.body).toMatchObject({ error: { code: 'queue_unavailable' } });
  });

  it('fuzz: no body and no header draws a 5xx, and none adds a fact to a receipt', async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    await rig.sandbox.control.idle();
    await rig.drained();
    // The receipt holds what Stripe says now, so a fuzzed event that makes the worker re-read finds nothing new.
    await rig.facts.reread(effectId);
    const before = await rig.observed(effectId);
    const eventLike = fc.record(
      {
        id: fc.oneof(fc.string(), fc.constantFrom('evt_1', '123', 'evt:1', 'evt_a/b', ''), fc.integer()),
        object: fc.constantFrom('event', 'refund', undefined),
        type: fc.oneof(fc.constantFrom(...FACT_EVENTS), fc.string()),
        created: fc.oneof(fc.integer(), fc.string()),
        data: fc.oneof(
          fc.constant(null),
          fc.record({ object: fc.oneof(fc.anything(), fc.record({ id: fc.oneof(fc.string(), fc.constant(paymentIntent)), object: fc.constantFrom('refund', 'dispute', 'charge', 'customer', 'credit_note'), payment_intent: fc.constant(paymentIntent), customer: fc.string(), status: fc.string(), metadata: fc.oneof(fc.constant({ interlock_effect_id: effectId }), fc.anything()) }, { requiredKeys: [] })) }),
        ),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(fc.string(), fc.json(), eventLike.map((value) => JSON.stringify(value)), fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes).toString('latin1')));
    const now = () => Math.floor(Date.now() / 1000);
    const signature = fc.oneof(
      fc.constant(() => null),
      fc.string().map((text) => () => text),
      fc.constant((text: string) => signWebhookBody(text, rig.forwardSecret)),
      fc.integer({ min: 301, max: 100_000 }).map((skew) => (text: string) => signWebhookBody(text, rig.forwardSecret, now() - skew)),
      fc.constant((text: string) => `${signWebhookBody(text, rig.forwardSecret)},v1=${'0'.repeat(64)},v0=abc`),
      fc.constant((text: string) => signWebhookBody(`${text} `, rig.forwardSecret)),
    );
    const contentType = fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', '');
    await fc.assert(
      fc.asyncProperty(body, signature, contentType, async (text, sign, type) => {
        const header = sign(text);
        const answer = await fetch(rig.webhookUrl, { method: 'POST', body: text, headers: { ...(type === '' ? {} : { 'content-type': type }), ...(header === null ? {} : { 'stripe-signature': header }) } });
        await answer.arrayBuffer();
        expect([200, 400, 413]).toContain(answer.status);
      }),
      { numRuns: 300 },
    );
    await rig.drained(30_000);
    // Whatever was queued was handled: the receipt holds the facts it held, each once.
    expect(await rig.observed(effectId)).toEqual(before);
    expect(rig.answers.every((status) => status < 500)).toBe(true);
  }, 60_000);
});
