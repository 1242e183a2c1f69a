// Rule: a log limited to one line per interval is not silenced by a wall clock stepped back. limitedErrorLog
// ("heartbeat failed", a scrape that cannot read Redis), the webhook route's refusal log and openStores' "Redis
// connection error" note measured their 10 s on Date.now(): after a step back of an hour (NTP, a VM restored from a
// snapshot) nothing was logged for an hour, while the step itself had every Stripe delivery refused. They measure on a
// monotonic clock, and a clock given that went back counts as the interval over.
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import express from 'express';
import { pino } from 'pino';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createWebhookVerifier, limitedErrorLog, openStores, signWebhookBody } from '../../src/interlock.js';
import { stripeWebhookRouter } from '../../webhooks/stripe-route.js';
import { testConfig, testKey } from '../support/harness.js';

const HOUR = 3_600_000;

afterEach(() => {
  vi.restoreAllMocks();
});

/** A pino logger whose lines (their msg) are kept in `lines`. */
function capturing(): { logger: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(String((JSON.parse(line) as { msg?: unknown }).msg)) });
  return { logger, lines };
}

/** Date.now() and performance.now() as the test sets them. */
function clocks(): { stepWall(ms: number): void; pass(ms: number): void } {
  let wall = Date.now();
  let mono = performance.now();
  vi.spyOn(Date, 'now').mockImplementation(() => wall);
  vi.spyOn(performance, 'now').mockImplementation(() => mono);
  return {
    stepWall: (ms) => void (wall += ms),
    pass: (ms) => {
      wall += ms;
      mono += ms;
    },
  };
}

describe('limitedErrorLog', () => {
  it('logs again after a clock it was given stepped back, and on its own monotonic clock by default', () => {
    const { logger, lines } = capturing();
    let now = 1_800_000_000_000;
    const given = limitedErrorLog(logger, 'heartbeat failed', { now: () => now });
    given(new Error('ECONNREFUSED'));
    now -= HOUR;
    now += 11_000;
    given(new Error('ECONNREFUSED'));
    expect(lines).toEqual(['heartbeat failed', 'heartbeat failed']);

    const time = clocks();
    const own = limitedErrorLog(logger, 'metrics: could not read the Redis clock at scrape time');
    own(new Error('ECONNREFUSED'));
    time.stepWall(-HOUR);
    time.pass(11_000);
    own(new Error('ECONNREFUSED'));
    expect(lines.filter((line) => line.startsWith('metrics:'))).toHaveLength(2);
  });
});

describe("openStores' Redis connection error note", () => {
  it('is written again 10 s after the last, however the wall clock stepped in between', async () => {
    const { logger, lines } = capturing();
    const redis = new Redis({ port: 1, lazyConnect: true, enableOfflineQueue: false });
    const stores = await openStores(testConfig(), { logger, signingKey: testKey().key, redis });
    try {
      const time = clocks();
      redis.emit('error', new Error('connect ECONNREFUSED 127.0.0.1:1'));
      time.stepWall(-HOUR);
      time.pass(11_000);
      redis.emit('error', new Error('connect ECONNREFUSED 127.0.0.1:1'));
      expect(lines.filter((line) => line === 'Redis connection error; retrying')).toHaveLength(2);
    } finally {
      vi.restoreAllMocks();
      await stores.close();
      redis.disconnect();
    }
  });
});

describe("the webhook route's refusal log", () => {
  const SECRET = `whsec_${'c'.repeat(32)}`;
  const deliver = (app: express.Express, signedAt: number) => {
    const body = JSON.stringify({ id: `evt_${Math.random().toString(36).slice(2)}`, object: 'event', type: 'refund.updated', created: signedAt, data: { object: { id: 're_1', object: 'refund', status: 'succeeded', amount: 100, metadata: {} } } });
    return request(app).post('/webhooks/stripe').set('content-type', 'application/json').set('stripe-signature', signWebhookBody(body, SECRET, signedAt)).send(body);
  };

  it('logs the stale deliveries that follow a step back of an hour, a line per interval', async () => {
    let host = 1_800_000_000_000;
    const warned: string[] = [];
    const app = express();
    app.use(stripeWebhookRouter({ verify: createWebhookVerifier([SECRET], { nowSeconds: () => Math.floor(host / 1000) }), logger: { warn: (_fields: unknown, message?: string) => void warned.push(String(message)) }, accept: async () => undefined, now: () => host, hostClock: () => null }));
    let stripe = host;
    expect((await deliver(app, Math.floor(stripe / 1000) - 600)).status).toBe(400);
    host -= HOUR;
    for (let minute = 1; minute <= 3; minute += 1) {
      host += 60_000;
      stripe += 60_000;
      expect((await deliver(app, Math.floor(stripe / 1000))).status).toBe(400);
    }
    expect(warned.filter((line) => line.includes('(stale_timestamp)'))).toHaveLength(4);
  });

  it('measures its interval on a monotonic clock unless given one', async () => {
    const warned: string[] = [];
    const app = express();
    app.use(stripeWebhookRouter({ verify: () => ({ ok: false, reason: 'stale_timestamp', message: 'The signature is old.' }), logger: { warn: (_fields: unknown, message?: string) => void warned.push(String(message)) }, accept: async () => undefined, hostClock: () => null }));
    const time = clocks();
    expect((await request(app).post('/webhooks/stripe').set('stripe-signature', 't=1,v1=00').send('{}')).status).toBe(400);
    time.stepWall(-HOUR);
    time.pass(11_000);
    expect((await request(app).post('/webhooks/stripe').set('stripe-signature', 't=1,v1=00').send('{}')).status).toBe(400);
    expect(warned).toHaveLength(2);
  });
});
