// A Redis that restarts can leave a facts job active with nobody running it: a worker took it (Redis stored the
// taking) but never heard so, or could not report its end while Redis was down. BullMQ gives such a job out again
// only when its lock lapses (up to a minute), and the webhook's facts wait that long for their receipt. The facts
// worker applies the events of such jobs as soon as its connection is back (applying an event twice appends
// nothing: facts are keyed by event id).
import { randomBytes } from 'node:crypto';
import { Worker } from 'bullmq';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createFactsQueue, startFactsWorker } from '../../queues/facts.js';
import { createFacts, openStores, type StripeEvent } from '../../src/interlock.js';
import { testConfig, testKey } from '../support/harness.js';
import { startPrivateRedis } from '../support/private-redis.js';

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

const event = (): StripeEvent => ({ id: `evt_${randomBytes(8).toString('hex')}`, type: 'refund.updated', data: { object: { id: 're_outage', object: 'refund', status: 'succeeded' } } });

describe('the facts worker after Redis restarts', () => {
  it('applies the event of a job taken but never run while Redis went away once its connection is back, not when the lock lapses', async () => {
    const redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
    closers.push(() => redis.stop());
    const stores = await openStores(testConfig({ redisUrl: redis.url }), { logger: pino({ level: 'silent' }), signingKey: testKey().key });
    closers.push(() => stores.close());
    const queue = createFactsQueue(stores);
    closers.push(() => queue.close());
    // The worker's one slot is held by an event whose applying waits for the test, so it takes no other job.
    const facts = createFacts(stores, null);
    const applyEvent = facts.applyEvent.bind(facts);
    const applied: string[] = [];
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const busy = event();
    facts.applyEvent = async (each) => {
      if (each.id === busy.id) await released;
      applied.push(each.id);
      return applyEvent(each);
    };
    const worker = startFactsWorker(stores, facts, { concurrency: 1 });
    closers.push(() => worker.close());
    await queue.accept(busy);
    await expect.poll(async () => (await queue.queue.getJob(busy.id))?.processedOn, { timeout: 10_000 }).toBeDefined();
    // Another worker takes the next job and is gone before it runs it: the job stays active, locked for a minute.
    const connection = stores.queueConnection();
    let taken: () => void = () => undefined;
    const tookIt = new Promise<void>((resolve) => (taken = resolve));
    const holder = new Worker(stores.queues.facts, () => { taken(); return new Promise(() => undefined); }, { connection, prefix: stores.queues.prefix, lockDuration: 60_000, stalledInterval: 30_000 });
    const orphan = event();
    await queue.accept(orphan);
    await tookIt;
    await holder.close(true);
    await connection.quit();
    release();
    await expect.poll(async () => queue.queue.getJobState(busy.id), { timeout: 10_000 }).toBe('completed');
    expect(await queue.queue.getJobState(orphan.id)).toBe('active');
    expect(applied).toEqual([busy.id]);
    // Redis restarts from its append-only file: the job is still active, its holder gone, its lock good for a minute.
    const startedAt = Date.now();
    await redis.kill('SIGKILL');
    await redis.restart();
    await expect.poll(() => applied, { timeout: 20_000, interval: 100 }).toContain(orphan.id);
    expect(Date.now() - startedAt).toBeLessThan(20_000);
    await expect.poll(() => worker.adoptedAfterOutages(), { timeout: 10_000 }).toBe(1);
    expect(applied.filter((id) => id === orphan.id)).toHaveLength(1);
  }, 60_000);
});
