// The facts queue's producer on real BullMQ and Redis (issue 10 §1): a verified event is answered only once its job
// (id = event id) is stored, a redelivery is a no-op counted as a duplicate, whether it comes in the same turn of
// the event loop as the first delivery or later, and a queue that cannot take the event makes the route answer 503.
import { randomBytes } from 'node:crypto';
import express from 'express';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFactsQueue, EVENT_MARKER_MS, FACTS_ACCEPT_TIMEOUT_MS, startFactsWorker, type FactsQueue } from '../../queues/facts.js';
import { createWebhookVerifier, openStores, signWebhookBody, type FactsApplier, type Stores, type StripeEvent } from '../../src/interlock.js';
import { stripeWebhookRouter, type WebhookOutcome } from '../../webhooks/stripe-route.js';
import { sleep, testConfig, testKey } from '../support/harness.js';
import { startPrivateRedis } from '../support/private-redis.js';

let stores: Stores;
let facts: FactsQueue;
let redis: Redis;
const config = testConfig();

beforeAll(async () => {
  stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  facts = createFactsQueue(stores);
  // Connected first: before, a later batch's check may reach Redis ahead of an earlier batch's adds (queues/facts.ts).
  await facts.queue.waitUntilReady();
  redis = new Redis(config.redisUrl);
});

afterAll(async () => {
  await facts.close();
  await stores.close();
  for (const pattern of [`${config.keyPrefix}:*`, `{${config.keyPrefix}-queues}:*`]) {
    const stale = await redis.keys(pattern);
    for (let i = 0; i < stale.length; i += 500) await redis.del(...stale.slice(i, i + 500));
  }
  await redis.quit();
});

const event = (type = 'refund.updated'): StripeEvent => ({ id: `evt_${randomBytes(8).toString('hex')}`, type, data: { object: { id: 're_1', object: 'refund', status: 'succeeded' } } });

describe('the facts queue', () => {
  it('answers each event of a burst once its own job, under the event id, is stored', async () => {
    const events = Array.from({ length: 40 }, () => event());
    const stored = await Promise.all(events.map(async (each) => ({ accepted: await facts.accept(each), stored: await redis.exists(facts.queue.toKey(each.id)) })));
    expect(stored).toEqual(events.map(() => ({ accepted: { duplicate: false }, stored: 1 })));
    const jobs = await Promise.all(events.map((each) => facts.queue.getJob(each.id)));
    expect(jobs.map((job) => [job?.name, job?.data])).toEqual(events.map((each) => [each.type, each]));
  });

  it('an event delivered twice in the same turn is queued once, and its second delivery is a duplicate', async () => {
    const twice = event();
    const other = event();
    const answers = await Promise.all([facts.accept(twice), facts.accept(other), facts.accept(twice)]);
    expect(answers).toEqual([{ duplicate: false }, { duplicate: false }, { duplicate: true }]);
    expect((await facts.queue.getJob(twice.id))?.data).toEqual(twice);
  });

  it('an event delivered twice in one turn, in two batches of it, is queued once, and its second delivery is a duplicate', async () => {
    const twice = event();
    const burst = [twice, ...Array.from({ length: 40 }, () => event()), twice];
    const answers = await Promise.all(burst.map((each) => facts.accept(each)));
    expect(answers.map((answer) => answer.duplicate)).toEqual([false, ...Array.from({ length: 40 }, () => false), true]);
    expect(await Promise.all(burst.map(async (each) => (await facts.queue.getJob(each.id))?.id))).toEqual(burst.map((each) => each.id));
  });

  it('an event delivered again later is a duplicate and changes nothing', async () => {
    const once = event();
    expect(await facts.accept(once)).toEqual({ duplicate: false });
    const before = await redis.hgetall(facts.queue.toKey(once.id));
    expect(await facts.accept(once)).toEqual({ duplicate: true });
    expect(await redis.hgetall(facts.queue.toKey(once.id))).toEqual(before);
  });

  it('when Redis refuses the adds, every event of the batch is refused (the route answers 503) and none is answered queued', async () => {
    // BullMQ's add increments the queue's id counter first: a counter that is no integer makes Redis refuse it.
    const counter = facts.queue.toKey('id');
    const saved = await redis.get(counter);
    await redis.set(counter, 'not a number');
    try {
      const answers = await Promise.allSettled([facts.accept(event()), facts.accept(event())]);
      expect(answers.map((answer) => answer.status)).toEqual(['rejected', 'rejected']);

      const secret = `whsec_${randomBytes(12).toString('hex')}`;
      const outcomes: WebhookOutcome[] = [];
      const app = express().use(stripeWebhookRouter({ verify: createWebhookVerifier([secret]), accept: (verified) => facts.accept(verified), onOutcome: (outcome) => outcomes.push(outcome) }));
      const body = JSON.stringify({ ...event('refund.failed'), object: 'event', created: Math.floor(Date.now() / 1000) });
      const answer = await request(app).post('/webhooks/stripe').set('stripe-signature', signWebhookBody(body, secret)).set('content-type', 'application/json').send(body);
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ error: { code: 'queue_unavailable' } });
      expect(outcomes).toEqual(['unavailable']);
    } finally {
      if (saved === null) await redis.del(counter);
      else await redis.set(counter, saved);
    }
    expect(await facts.accept(event())).toEqual({ duplicate: false });
  });
});

/** A facts queue of its own on a private Redis (connected), for tests that kill or stop that Redis; `stop` ends all. */
async function queueOnPrivateRedis() {
  const redisServer = await startPrivateRedis(['--save', '', '--appendonly', 'no']);
  const own = await openStores({ ...testConfig(), redisUrl: redisServer.url }, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  const queue = createFactsQueue(own);
  await queue.queue.waitUntilReady();
  return {
    redisServer,
    queue,
    async stop() {
      redisServer.process.kill('SIGCONT');
      await queue.close();
      await own.close();
      await redisServer.stop();
    },
  };
}

describe('the facts queue while its Redis is down', () => {
  it('refuses an event at once (the route answers 503) instead of holding the request until Redis returns, and takes it again after', { timeout: 60_000 }, async () => {
    const { redisServer: down, queue, stop } = await queueOnPrivateRedis();
    try {
      expect(await queue.accept(event())).toEqual({ duplicate: false });
      await down.kill();
      const secret = `whsec_${randomBytes(12).toString('hex')}`;
      const app = express().use(stripeWebhookRouter({ verify: createWebhookVerifier([secret]), accept: (verified) => queue.accept(verified) }));
      const body = JSON.stringify({ ...event('refund.failed'), object: 'event', created: Math.floor(Date.now() / 1000) });
      const started = Date.now();
      const answer = await request(app).post('/webhooks/stripe').set('stripe-signature', signWebhookBody(body, secret)).set('content-type', 'application/json').send(body);
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ error: { code: 'queue_unavailable' } });
      expect(Date.now() - started).toBeLessThan(FACTS_ACCEPT_TIMEOUT_MS + 2_000);
      // Back up: the delivery Stripe makes again is queued (or found queued, had the refused add gone through late).
      await down.restart();
      // Stripe delivers again later; here, as soon as the connection is back (ioredis reconnects on its own).
      const deliver = () => request(app).post('/webhooks/stripe').set('stripe-signature', signWebhookBody(body, secret)).set('content-type', 'application/json').send(body);
      let again = await deliver();
      for (let tries = 0; again.status === 503 && tries < 50; tries += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        again = await deliver();
      }
      expect(again.status).toBe(200);
      expect(await queue.queue.getJob((JSON.parse(body) as { id: string }).id)).toBeDefined();
    } finally {
      await stop();
    }
  });
});

describe('the facts queue while its Redis hangs', () => {
  it('answers 503 once the event was not stored within FACTS_ACCEPT_TIMEOUT_MS, and the add that lands late is found by the redelivery', { timeout: 60_000 }, async () => {
    const { redisServer: stuck, queue, stop } = await queueOnPrivateRedis();
    try {
      // Stopped, not killed: the connection stays up and nothing answers.
      stuck.process.kill('SIGSTOP');
      const late = event();
      const started = Date.now();
      await expect(queue.accept(late)).rejects.toMatchObject({ code: 'redis_unavailable' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(FACTS_ACCEPT_TIMEOUT_MS - 50);
      stuck.process.kill('SIGCONT');
      expect(await queue.accept(late)).toEqual({ duplicate: true });
    } finally {
      await stop();
    }
  });
});

describe('the facts worker', () => {
  it('tells the applier when an event\'s job ran before, so facts its failed run recorded get their alerts', async () => {
    const runs: { event: string; again: boolean }[] = [];
    // An applier whose first run of each event fails after its facts (as a refused alert write does).
    const applier = {
      applyEvent: async (applied: StripeEvent, options: { again?: boolean } = {}) => {
        runs.push({ event: applied.id, again: options.again ?? false });
        if (runs.filter((run) => run.event === applied.id).length === 1) throw new Error('Redis refused the alert write');
        return [];
      },
    } as unknown as FactsApplier;
    const worker = startFactsWorker(stores, applier);
    try {
      const retried = event();
      await facts.accept(retried);
      // The queue retries after its backoff (1 s).
      // (The worker also takes the events the cases above queued: only this one's runs are looked at.)
      const runsOf = () => runs.filter((run) => run.event === retried.id);
      for (let i = 0; i < 100 && runsOf().length < 2; i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(runsOf()).toEqual([{ event: retried.id, again: false }, { event: retried.id, again: true }]);
    } finally {
      await worker.close();
    }
  }, 20_000);
});

// Stripe redelivers an event it was not answered 200 for over up to 3 days: an event delivered again within that
// window is a duplicate, answered so and never applied again, even after its completed job was removed (completed
// facts jobs are kept only up to a count, 100,000, which an account of 35,000 events a day passes in under 3 days). A
// marker per event (keys.eventQueued, EVENT_MARKER_MS) says its job was queued; it is written only once the job is
// stored, so an event whose add failed is never answered `duplicate` and its redelivery is queued. Last in this file:
// they remove its completed jobs and make an add fail.
const DAY_MS = 86_400_000;

/** An applier that only counts how often each event was applied. */
function countingApplier(): { applier: FactsApplier; applied: Map<string, number> } {
  const applied = new Map<string, number>();
  const applier = {
    async applyEvent(each: StripeEvent) {
      applied.set(each.id, (applied.get(each.id) ?? 0) + 1);
      return [];
    },
    async concerned() {
      return [];
    },
  } as unknown as FactsApplier;
  return { applier, applied };
}

describe("a facts event delivered again within Stripe's retry window", () => {
  it('is a duplicate, and is not applied again, after its completed job was removed by the count cap', async () => {
    const { applier, applied } = countingApplier();
    const worker = startFactsWorker(stores, applier);
    try {
      const first = event();
      expect(await facts.accept(first)).toEqual({ duplicate: false });
      await expect.poll(() => facts.queue.getJobState(first.id), { timeout: 10_000 }).toBe('completed');
      // What the count cap does once 100,000 newer events completed: the oldest completed jobs are removed.
      await facts.queue.clean(0, 0, 'completed');
      expect(await facts.queue.getJob(first.id)).toBeUndefined();

      expect(await facts.accept(first), 'a redelivery inside the 3 days was taken as a new event').toEqual({ duplicate: true });
      await sleep(500);
      expect(applied.get(first.id)).toBe(1);
      expect(await facts.queue.getJob(first.id), 'the redelivery queued the event again').toBeUndefined();
    } finally {
      await worker.close();
    }
  });

  it("an event's marker is written only once its job is stored, and lasts longer than Stripe redelivers", async () => {
    // BullMQ's add increments the queue's id counter first: a counter that is no integer makes Redis refuse it.
    const counter = facts.queue.toKey('id');
    const saved = await redis.get(counter);
    const refused = event();
    const marker = stores.keys.eventQueued(refused.id);
    await redis.set(counter, 'not a number');
    try {
      await expect(facts.accept(refused)).rejects.toBeDefined();
    } finally {
      if (saved === null) await redis.del(counter);
      else await redis.set(counter, saved);
    }
    expect(await redis.exists(marker), 'a marker for an event whose job was never queued').toBe(0);
    // Stripe delivers it again: it is queued, not answered as a duplicate of the add that failed.
    expect(await facts.accept(refused)).toEqual({ duplicate: false });
    expect(await facts.queue.getJob(refused.id)).toBeDefined();
    const ttl = await redis.pttl(marker);
    expect(ttl).toBeGreaterThan(3 * DAY_MS);
    expect(ttl).toBeLessThanOrEqual(EVENT_MARKER_MS);
  });
});
