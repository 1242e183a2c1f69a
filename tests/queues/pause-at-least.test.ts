// Rule: a 429 pauses the effects queue for its Retry-After (or INTERLOCK_RATE_LIMIT_BACKOFF_MS), and never cuts short
// a longer pause already in force (another worker's longer Retry-After, a recovery pass's): pauseAtLeast lengthens a
// pause, never shortens one. The INTERLOCK_STRIPE_RATE limiter's count, kept in the same key, is no pause: a 429 met
// within such a window still pauses.
import { randomBytes } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pauseAtLeast } from '../../queues/effects.js';
import { REDIS_URL } from '../support/harness.js';

const name = `pause${randomBytes(5).toString('hex')}`;
const prefix = `{${name}}`;
let connection: Redis;
let queue: Queue;
let worker: Worker;

beforeAll(async () => {
  connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  queue = new Queue(name, { connection, prefix });
  worker = new Worker(name, async () => undefined, { connection, prefix, autorun: false });
  await worker.waitUntilReady();
});
afterAll(async () => {
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await connection.quit();
});

const pause = () => queue.getRateLimitTtl(Number.MAX_SAFE_INTEGER);

it('sets a pause when none is in force', async () => {
  await queue.removeRateLimitKey();
  await pauseAtLeast(worker, 5_000);
  expect(await pause()).toBeGreaterThan(4_000);
});

it('keeps a longer pause in force: a shorter 429 does not cut it short', async () => {
  await queue.rateLimit(60_000);
  await pauseAtLeast(worker, 1_000);
  expect(await pause()).toBeGreaterThan(50_000);
});

it('lengthens a shorter pause', async () => {
  await queue.rateLimit(1_000);
  await pauseAtLeast(worker, 30_000);
  expect(await pause()).toBeGreaterThan(20_000);
});

it('pauses over the INTERLOCK_STRIPE_RATE window, whose count is no pause', async () => {
  await queue.removeRateLimitKey();
  await connection.set(String(queue.keys.limiter), '3', 'PX', 60_000);
  expect(await pause()).toBe(0);
  await pauseAtLeast(worker, 2_000);
  const left = await pause();
  expect(left).toBeGreaterThan(1_000);
  expect(left).toBeLessThanOrEqual(2_000);
});
