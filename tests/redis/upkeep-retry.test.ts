// Rule: a committed effect the reconciler must watch (committed long after its binding) reaches the watch list even
// when the write that puts it there is refused once: the journal keeps what an index upkeep held when Redis refused it
// (OOM under noeviction, READONLY during a failover) and tries again, instead of waiting for a next bind that may
// never come. Lost, the effect is never re-read, and a refund that fails later with its webhook missed keeps saying
// "returned".
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { journalOf } from '../../src/interlock.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { sleep, startNode, testConfig, testKey } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const servers: PrivateRedis[] = [];
afterAll(async () => {
  await Promise.all(servers.map((redis) => redis.stop()));
});

it('a watch entry whose upkeep Redis refused (OOM) is written once Redis takes writes again', async () => {
  const redis = await startPrivateRedis(['--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction']);
  servers.push(redis);
  const admin = new Redis(redis.url);
  const node = await startNode({ config: testConfig({ redisUrl: redis.url }), target: createMemoryTarget({ tier: 1 }), key: testKey().key, redis: new Redis(redis.url, { maxRetriesPerRequest: 1 }) });
  try {
    const journal = journalOf(node.stores);
    const effectId = 'a'.repeat(64);
    const settledAt = await journal.serverTime();
    // Redis is full: every write is refused with OOM.
    await admin.config('SET', 'maxmemory', '1');
    journal.settledAfterSend(effectId, settledAt, settledAt - 86_400_000, 10);
    await sleep(300);
    expect(await admin.zscore(node.stores.keys.watch, effectId)).toBeNull();
    await admin.config('SET', 'maxmemory', '0');
    const giveUp = Date.now() + 5_000;
    while ((await admin.zscore(node.stores.keys.watch, effectId)) === null && Date.now() < giveUp) await sleep(50);
    expect(Number(await admin.zscore(node.stores.keys.watch, effectId))).toBe(settledAt);
  } finally {
    await admin.config('SET', 'maxmemory', '0');
    await node.close();
    await admin.quit();
  }
});
