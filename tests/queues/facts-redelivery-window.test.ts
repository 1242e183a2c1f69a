// Stripe redelivers an event it was not answered 200 for over up to 3 days. The rule: an event delivered again
// within that window is a duplicate, answered so and never applied again, even after its completed job was removed:
// completed facts jobs are kept only up to a count (100,000), which an account of 35,000 events a day passes in under
// 3 days. A marker per event (keys.eventQueued, EVENT_MARKER_MS) says its job was queued; it is written only once the
// job is stored, so an event whose add failed is never answered `duplicate` and its redelivery is queued.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFactsQueue, EVENT_MARKER_MS, startFactsWorker, type FactsQueue } from '../../queues/facts.js';
import { openStores, type FactsApplier, type Stores, type StripeEvent } from '../../src/interlock.js';
import { sleep, testConfig, testKey } from '../support/harness.js';

const DAY_MS = 86_400_000;
const config = testConfig();
let stores: Stores;
let facts: FactsQueue;
let redis: Redis;

beforeAll(async () => {
  stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  facts = createFactsQueue(stores);
  await facts.queue.waitUntilReady();
  redis = new Redis(config.redisUrl);
});

afterAll(async () => {
  await facts.close();
  await stores.close();
  for (const pattern of [`${config.keyPrefix}:*`, `{${config.keyPrefix}-queues}:*`]) {
    const stale = await redis.keys(pattern);
    if (stale.length > 0) await redis.del(...stale);
  }
  await redis.quit();
});

const event = (): StripeEvent => ({ id: `evt_${randomBytes(8).toString('hex')}`, type: 'refund.updated', data: { object: { id: 're_window', object: 'refund', status: 'succeeded' } } });

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
