// Rule (src/redis/client.ts createRedisClient, failUnanswered): the service's Redis connection never sends a command
// twice. A command written whose reply was lost with its connection may have run: it fails with RedisReplyLost, on one
// server (ioredis would resend it after the reconnect, autoResendUnfulfilledCommands) and on a Redis Cluster (ioredis
// would resend it to the slot's node, taking the closed connection for a failover). A command not yet written when the
// connection dropped (the offline queue) is still sent once Redis is back.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster, Redis } from 'ioredis';
import { createRedisClient, RedisReplyLost } from '../../src/redis/client.js';
import { keySlot } from '../../src/redis/key-slot.js';
import { REDIS_URL } from '../support/harness.js';
import type { PrivateRedis } from '../support/private-redis.js';
import { startCluster } from '../support/private-cluster.js';
import { replyLossProxy } from '../support/reply-loss-proxy.js';

/** Counts its runs in KEYS[1]; ARGV[1] marks the write that carries it, and ARGV[2] is how long it runs, in ms. */
const COUNTED = `
local runs = redis.call('INCR', KEYS[1])
local started = redis.call('TIME')
local until_us = tonumber(started[1]) * 1000000 + tonumber(started[2]) + tonumber(ARGV[2]) * 1000
repeat
  local now = redis.call('TIME')
until tonumber(now[1]) * 1000000 + tonumber(now[2]) >= until_us
return runs`;

describe('one server', () => {
  it('a script whose reply was lost runs once and fails with RedisReplyLost; a command queued while the connection was down is sent', async () => {
    const proxy = await replyLossProxy(REDIS_URL);
    const client = createRedisClient({ redisUrl: proxy.url, redisCluster: false });
    const admin = new Redis(REDIS_URL);
    const key = `lost-reply:${randomBytes(6).toString('hex')}`;
    const marker = `mark-${randomBytes(6).toString('hex')}`;
    try {
      await client.ping();
      proxy.arm((written) => written.includes(marker));
      const lost = client.eval(COUNTED, 1, key, marker, '0');
      // Asked while the connection is being lost: written only to the next connection.
      const queued = lost.catch(() => client.get(key));
      await expect(lost).rejects.toBeInstanceOf(RedisReplyLost);
      expect(proxy.fired()).toBe(1);
      expect(await queued).toBe('1');
      expect(await admin.get(key)).toBe('1');
    } finally {
      await admin.del(key);
      admin.disconnect();
      client.disconnect();
      await proxy.close();
    }
  });

  it('a copy of the connection (the journal opens them for WAIT) fails a lost reply too, instead of never answering', async () => {
    const proxy = await replyLossProxy(REDIS_URL);
    const client = createRedisClient({ redisUrl: proxy.url, redisCluster: false });
    const copy = client instanceof Redis ? client.duplicate({ maxRetriesPerRequest: 1 }) : null;
    const marker = `mark-${randomBytes(6).toString('hex')}`;
    try {
      expect(copy).not.toBeNull();
      await copy?.ping();
      proxy.arm((written) => written.includes(marker));
      await expect(copy?.echo(marker)).rejects.toBeInstanceOf(RedisReplyLost);
      expect(proxy.fired()).toBe(1);
    } finally {
      copy?.disconnect();
      client.disconnect();
      await proxy.close();
    }
  });
});

describe('a Redis Cluster', () => {
  const servers: PrivateRedis[] = [];
  beforeAll(async () => {
    servers.push(...(await startCluster([['--appendonly', 'no'], ['--appendonly', 'no'], ['--appendonly', 'no']])));
  }, 60_000);
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  it("a script whose node connection closed before its reply runs once and fails with RedisReplyLost, not resent as after a failover", async () => {
    const client = createRedisClient({ redisUrl: servers[0]?.url ?? '', redisCluster: true });
    const key = `{lost-reply}:${randomBytes(6).toString('hex')}`;
    try {
      await client.get(key);
      // The script runs for 300 ms, so its reply cannot come before the connection it was written on is closed.
      const lost = client.eval(COUNTED, 1, key, 'cluster', '300');
      expect(client).toBeInstanceOf(Cluster);
      const serving = (client as Cluster).slots[keySlot(key)]?.[0];
      const node = (client as Cluster).nodes('master').find((master) => `${master.options.host ?? ''}:${master.options.port ?? ''}` === serving);
      expect(node?.commandQueue.length).toBe(1);
      const stream = node?.stream;
      expect(stream).toBeDefined();
      await new Promise<void>((resolve) => {
        const check = () => (stream === undefined || stream.writableLength === 0 ? resolve() : setImmediate(check));
        setImmediate(check);
      });
      stream?.destroy();
      await expect(lost).rejects.toBeInstanceOf(RedisReplyLost);
      expect(await client.get(key)).toBe('1');
    } finally {
      await client.del(key).catch(() => undefined);
      client.disconnect();
    }
  });
});
