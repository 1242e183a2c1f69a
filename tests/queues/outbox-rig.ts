// The rig of the producers' outbox tests (tests/queues/outbox.test.ts, removed-job-requeued.test.ts): a sender over a
// tier-3 memory target (nothing dedupes a second send, so a proposal queued twice would land twice), the effects
// queue, and a Redis connection to look at the open index with.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import { createEffectsQueue, type EffectsQueue } from '../../queues/effects.js';
import { createMemoryTarget, openStores, startSender, type MemoryTarget, type Sender, type Stores } from '../../src/interlock.js';
import { removePrefixes, sleep, testConfig, testKey } from '../support/harness.js';

export type OutboxRig = { stores: Stores; sender: Sender; target: MemoryTarget; queue: EffectsQueue; redis: Redis };

const keyPair = testKey();

/**
 * A rig whose closing is pushed on `closers`; `targetOf` makes another target than the tier-3 memory one; `logger`, one
 * whose lines a test reads (silent otherwise).
 */
export async function outboxRig(closers: (() => Promise<unknown>)[], targetOf?: (sendTimeoutMs: number) => MemoryTarget, logger: Logger = pino({ level: 'silent' })): Promise<OutboxRig> {
  const config = testConfig({ keyPrefix: `ob${randomBytes(6).toString('hex')}` });
  const target = targetOf?.(config.sendTimeoutMs) ?? createMemoryTarget({ tier: 3, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const stores = await openStores(config, { logger, signingKey: keyPair.key });
  const sender = await startSender(stores, target);
  const queue = createEffectsQueue(stores);
  const redis = new Redis(config.redisUrl);
  closers.push(async () => {
    await queue.close();
    await sender.close();
    await stores.close();
    await redis.quit();
    await removePrefixes([config.keyPrefix, `{${config.keyPrefix}-queues}`]);
  });
  return { stores, sender, target, queue, redis };
}

/** The open index's entries for `effectId` ("<effect id>:<token>") with their scores (bound at, Redis ms). */
export async function indexed(rig: OutboxRig, effectId: string): Promise<{ entry: string; at: number }[]> {
  const flat = await rig.redis.zrange(rig.stores.keys.openIndex, '0', '-1', 'WITHSCORES');
  const found: { entry: string; at: number }[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) if (flat[i]?.startsWith(`${effectId}:`)) found.push({ entry: flat[i] as string, at: Number(flat[i + 1]) });
  return found;
}

/** `read` until `done` says so, every 25 ms; throws naming `what` after `ms`. */
export async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, ms = 15_000): Promise<T> {
  const giveUp = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > giveUp) throw new Error(`${what} did not happen within ${ms} ms`);
    await sleep(25);
  }
}
