// Rule: a stopping worker clears its heartbeat only while the key holds its own boot nonce: a worker another process
// replaced under its worker id (told to "stop one of the two") must not remove the live process's heartbeat, or every
// other worker reads that process's claims as a dead sender's and takes them over while it still sends
// (clear-heartbeat-1.lua).
import { randomBytes } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import { createRedisClient, closeConnection } from '../../src/redis/client.js';
import { createKeys } from '../../src/redis/keys.js';
import { createHeartbeat } from '../../src/redis/heartbeat.js';

const prefix = `t-heartbeat-clear-${randomBytes(4).toString('hex')}`;
const redis = createRedisClient({ redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', redisCluster: false });
const keys = createKeys(prefix);

afterEach(async () => {
  await redis.del(keys.heartbeat('W'));
  await closeConnection(redis);
});

it('stopping the superseded process leaves the live process under the same worker id alive', async () => {
  const old = createHeartbeat({ redis, keys, workerId: 'W', nonce: 'nonce-old', intervalMs: 60_000, ttlMs: 10_000 });
  const live = createHeartbeat({ redis, keys, workerId: 'W', nonce: 'nonce-new', intervalMs: 60_000, ttlMs: 10_000 });
  await old.beat();
  await live.beat(); // first beat of the new boot: takes the id
  await old.beat(); // the old one learns it is superseded
  expect(old.supersededBy()).toBe('nonce-new');
  expect(live.supersededBy()).toBeNull();
  expect(live.aliveFor()).toBeGreaterThan(1_000); // the live one trusts its key for seconds yet

  // The operator stops the superseded one, as the WorkerSupersededError message advises (close clears by default).
  await old.stop({ clear: true });

  // The live process still beats under W: others must not read its claims as a dead sender's.
  expect((await live.probe('W', 'nonce-new')).alive).toBe(true);
});
