// Shutting down while Redis is away: every queue part's close() ends, it does not wait for a Redis that may never
// come back. A service asked to stop during an outage (or right after one, while its connections are between
// reconnect attempts) must stop; what it left is settled by recovery once Redis answers. ioredis ends neither a
// QUIT nor a disconnect of a connection that is waiting to reconnect, so these closes hung before.
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createEffectsQueue, startEffectsWorker } from '../../queues/effects.js';
import { createFactsQueue, startFactsWorker } from '../../queues/facts.js';
import { startRecovery } from '../../queues/recovery.js';
import { jobEvents } from '../../queues/job-events.js';
import { createFacts, createMemoryTarget, openStores, startSender, type Stores } from '../../src/interlock.js';
import { approvalTerms, refundProposal, testConfig, testKey } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const running: PrivateRedis[] = [];
afterAll(async () => {
  for (const redis of running) await redis.stop();
});

/** `close` ends within `ms`, or the test fails naming what did not. */
async function ends(what: string, close: () => Promise<unknown>, ms = 15_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
  const result = await Promise.race([close().then(() => 'ended' as const), late]).finally(() => clearTimeout(timer));
  expect(result, `${what}: close() did not end within ${ms} ms while Redis was away`).toBe('ended');
}

/** The queue connections `stores` hands out from now on, kept so the test can see their state. */
function watchConnections(stores: Stores): ReturnType<Stores['queueConnection']>[] {
  const made: ReturnType<Stores['queueConnection']>[] = [];
  const open = stores.queueConnection.bind(stores);
  stores.queueConnection = () => {
    const connection = open();
    made.push(connection);
    return connection;
  };
  return made;
}

/** Every connection still open is between two reconnect attempts: the state in which ioredis ends neither a QUIT nor a disconnect. */
async function allWaitingToReconnect(connections: readonly { status: string }[]): Promise<void> {
  await expect.poll(() => connections.filter((connection) => connection.status !== 'end').every((connection) => connection.status === 'reconnecting'), { timeout: 10_000, interval: 5 }).toBe(true);
}

/** Dropped, not left to reconnect: once Redis is back, no closed connection makes an attempt or comes up again. */
async function staysClosed(redis: PrivateRedis, connections: readonly ReturnType<Stores['queueConnection']>[]): Promise<void> {
  let attempts = 0;
  for (const connection of connections) connection.on('reconnecting', () => (attempts += 1));
  await redis.restart();
  await new Promise((resolve) => setTimeout(resolve, 5_500)); // longer than ioredis ever waits between attempts (5.2 s)
  expect(attempts).toBe(0);
  expect(connections.map((connection) => connection.status)).not.toContain('ready');
}

describe('closing while Redis is away', () => {
  it('a job event stream whose connection is waiting to reconnect closes at once', async () => {
    const redis = await startPrivateRedis(['--save', '']);
    running.push(redis);
    const stores = await openStores(testConfig({ redisUrl: redis.url }), { logger: pino({ level: 'silent' }), signingKey: testKey().key });
    const connections = watchConnections(stores);
    const events = jobEvents(stores, stores.queues.effects);
    await events.stream();
    expect(connections).toHaveLength(1);
    await redis.kill('SIGKILL');
    await allWaitingToReconnect(connections);
    await ends('the job event stream', () => events.close());
    await staysClosed(redis, connections);
    await stores.close().catch(() => undefined);
  });

  it('the effects queue, its worker, recovery, the facts queue and its worker all close while Redis is down', async () => {
    const redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
    running.push(redis);
    const config = testConfig({ redisUrl: redis.url });
    const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
    const connections = watchConnections(stores);
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
    target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
    const sender = await startSender(stores, target);
    const queue = createEffectsQueue(stores, { backoffMs: 50 });
    const worker = startEffectsWorker(stores, sender, { concurrency: 2 });
    const recovery = startRecovery(stores, sender, { safetyIntervalMs: 5_000 });
    const facts = createFactsQueue(stores);
    const factsWorker = startFactsWorker(stores, createFacts(stores, null));
    // Every part has talked to Redis: one refund goes through, so the event stream is open too.
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const proposed = await queue.propose(refundProposal({ approval: terms.id }));
    expect(await queue.waitFor(proposed.effectId, 10_000)).toMatchObject({ outcome: 'COMMITTED' });
    await facts.queue.waitUntilReady();
    await redis.kill('SIGKILL');
    await allWaitingToReconnect(connections);
    await ends('the effects worker', () => worker.close());
    await ends('the effects queue', () => queue.close());
    await ends('recovery', () => recovery.close());
    await ends('the facts worker', () => factsWorker.close());
    await ends('the facts queue', () => facts.close());
    await ends('the sender', () => sender.close());
    await ends('the stores', () => stores.close());
    await staysClosed(redis, connections);
  }, 120_000);
});
