// Rule: an event the service must not apply is never dropped without a word. An event of the other mode than the
// service's Stripe key (live at a test-key service, test at a live one: a misrouted endpoint) is answered 400
// `livemode_mismatch`, saying what to check, and counted as a rejection by that reason; a Connect event (`account`
// set: a connected account's, while Interlock moves money on the platform account only) is answered 200, not
// queued, warned of by event id and account, and counted as verified with result="connect". Neither is queued.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import express from 'express';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookVerifier, signWebhookBody, type StripeEvent } from '../../src/interlock.js';
import { createMetrics, type Metrics } from '../../webhooks/ops/metrics.js';
import { stripeWebhookRouter } from '../../webhooks/stripe-route.js';
import { createWorld, type World } from '../support/harness.js';

const SECRET = `whsec_${randomBytes(16).toString('hex')}`;

let world: World;
let metrics: Metrics;
const queued: StripeEvent[] = [];
const warnings: Record<string, unknown>[] = [];

/** The route as a service with a key of `mode` runs it, its outcomes counted in `metrics` and its warnings kept. */
function routeOf(mode: 'test' | 'live') {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') warnings.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return express().use(stripeWebhookRouter({
    verify: createWebhookVerifier([SECRET], { mode }),
    accept: async (event) => void queued.push(event),
    onOutcome: (outcome, detail) => metrics.webhookOutcome(outcome, detail),
    logger: pino({ level: 'warn' }, sink),
  }));
}

let seq = 0;
async function deliver(app: express.Express, type: string, extra: Record<string, unknown>) {
  seq += 1;
  const id = `evt_modes${Date.now()}x${seq}`;
  const body = JSON.stringify({ id, object: 'event', api_version: '2019-02-19', created: Math.floor(Date.now() / 1000), livemode: false, pending_webhooks: 1, request: { id: null, idempotency_key: null }, type, data: { object: { id: `re_modes${seq}`, object: 'refund', status: 'failed', amount: 2_000, payment_intent: 'pi_modes', metadata: { interlock_effect_id: 'a'.repeat(64) } } }, ...extra }, null, 2);
  const answer = await request(app).post('/webhooks/stripe').set('content-type', 'application/json; charset=utf-8').set('stripe-signature', signWebhookBody(body, SECRET)).send(body);
  return { id, answer };
}

async function scrape(name: string, labels: string): Promise<number | undefined> {
  const line = (await metrics.render()).text.split('\n').find((item) => item.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

beforeAll(async () => {
  world = await createWorld();
  metrics = createMetrics({ stores: (await world.node('a')).stores, defaultMetrics: false });
}, 30_000);

afterAll(async () => {
  await world?.close();
});

describe('events of the other mode', () => {
  it('a live-mode event at a test-key service is a 400 livemode_mismatch naming what to check, counted and not queued', async () => {
    const app = routeOf('test');
    const { id, answer } = await deliver(app, 'refund.failed', { livemode: true });
    expect(answer.status).toBe(400);
    const { code, message } = (answer.body as { error: { code: string; message: string } }).error;
    expect(code).toBe('livemode_mismatch');
    expect(message).toContain(id);
    expect(message).toMatch(/live-mode event .* test-mode Stripe key/);
    expect(message).toContain('STRIPE_WEBHOOK_SECRET');
    expect(queued.map((event) => event.id)).not.toContain(id);
    expect(await scrape('interlock_webhook_events_rejected_total', 'reason="livemode_mismatch"')).toBe(1);
  });

  it('a test-mode event at a live-key service is refused the same way', async () => {
    const { id, answer } = await deliver(routeOf('live'), 'charge.dispute.created', { livemode: false });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: { code: 'livemode_mismatch', message: expect.stringMatching(/test-mode event .* live-mode Stripe key/) } });
    expect(queued.map((event) => event.id)).not.toContain(id);
    expect(await scrape('interlock_webhook_events_rejected_total', 'reason="livemode_mismatch"')).toBe(2);
  });

  it('an event of the service\'s own mode is queued, its mode kept', async () => {
    const { id, answer } = await deliver(routeOf('test'), 'refund.failed', { livemode: false });
    expect(answer.status).toBe(200);
    expect(queued.find((event) => event.id === id)).toMatchObject({ id, livemode: false });
  });
});

describe('Connect events', () => {
  it('a connected account\'s refund event naming one of our effects is answered 200, not queued, warned of and counted', async () => {
    const { id, answer } = await deliver(routeOf('test'), 'refund.failed', { account: 'acct_1Connected0001' });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ received: true, ignored: true, reason: 'connect_account' });
    expect(queued.map((event) => event.id)).not.toContain(id);
    const warned = warnings.filter((line) => line.event === id);
    expect(warned).toEqual([expect.objectContaining({ account: 'acct_1Connected0001', type: 'refund.failed', msg: expect.stringMatching(/not applied/) })]);
    expect(await scrape('interlock_webhook_events_verified_total', 'result="connect"')).toBe(1);
  });

  it('a connected account\'s event of a type the facts worker never acts on is ignored as any such type, without a warning', async () => {
    const { id, answer } = await deliver(routeOf('test'), 'charge.succeeded', { account: 'acct_1Connected0001' });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ received: true, ignored: true });
    expect(warnings.filter((line) => line.event === id)).toEqual([]);
    expect(await scrape('interlock_webhook_events_verified_total', 'result="connect"')).toBe(1);
  });

  it('an empty account is the platform\'s own event, as `stripe listen` reads it', async () => {
    const { id, answer } = await deliver(routeOf('test'), 'refund.failed', { account: '' });
    expect(answer.status).toBe(200);
    expect(queued.map((event) => event.id)).toContain(id);
  });
});
