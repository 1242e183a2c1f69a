// Rule (src/redis/client.ts keepLostReplies; README "Redis"): a command whose reply a dropped connection lost has an
// unknown outcome, also on a Redis Cluster when that try was the last redirection ioredis allows. ioredis counts the
// try before it looks at its error and would reject with a plain "Too many Cluster redirections. Last error:
// RedisReplyLost: …", an outage the API answers "nothing was recorded" and that the settle's and the CLI's checks for a
// lost reply miss. The service's cluster client fails such a command with the RedisReplyLost itself.
import { randomBytes } from 'node:crypto';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient, isRedisOutage, RedisReplyLost } from '../../src/redis/client.js';
import { keySlot } from '../../src/redis/key-slot.js';
import { asApiError } from '../../webhooks/api/errors.js';
import type { PrivateRedis } from '../support/private-redis.js';
import { startCluster } from '../support/private-cluster.js';

/** Counts its runs in KEYS[1], then runs for ARGV[1] ms. */
const COUNTED = `
local runs = redis.call('INCR', KEYS[1])
local started = redis.call('TIME')
local until_us = tonumber(started[1]) * 1000000 + tonumber(started[2]) + tonumber(ARGV[1]) * 1000
repeat
  local now = redis.call('TIME')
until tonumber(now[1]) * 1000000 + tonumber(now[2]) >= until_us
return runs`;

describe('a Redis Cluster command whose reply was lost on the try that used up its redirections', () => {
  const servers: PrivateRedis[] = [];
  beforeAll(async () => {
    servers.push(...(await startCluster([['--appendonly', 'no'], ['--appendonly', 'no'], ['--appendonly', 'no']])));
  }, 60_000);
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('fails with RedisReplyLost (may or may not have run), not as an outage where nothing was recorded', async () => {
    const client = createRedisClient({ redisUrl: servers[0]?.url ?? '', redisCluster: true });
    expect(client).toBeInstanceOf(Cluster);
    const cluster = client as Cluster;
    const key = `{given-up}:${randomBytes(6).toString('hex')}`;
    try {
      await cluster.get(key);
      // No redirection left: the first try is the last one allowed, as after 24 of them during a slot move.
      cluster.options.maxRedirections = 0;
      // The script runs for 300 ms, so its reply cannot come before the connection it was written on is closed.
      const lost = cluster.eval(COUNTED, 1, key, '300');
      const serving = cluster.slots[keySlot(key)]?.[0];
      const node = cluster.nodes('master').find((master) => `${master.options.host ?? ''}:${master.options.port ?? ''}` === serving);
      expect(node?.commandQueue.length).toBe(1);
      const stream = node?.stream;
      expect(stream).toBeDefined();
      await new Promise<void>((resolve) => {
        const check = () => (stream === undefined || stream.writableLength === 0 ? resolve() : setImmediate(check));
        setImmediate(check);
      });
      stream?.destroy();
      const error = await lost.then(() => null, (failed: unknown) => failed);
      expect(error).toBeInstanceOf(RedisReplyLost);
      expect(isRedisOutage(error)).toBe(true);
      const answered = asApiError(error);
      expect({ code: answered.code, message: answered.message }).toEqual({ code: 'redis_unavailable', message: expect.stringMatching(/may or may not have run/) });
      expect(answered.message).not.toMatch(/nothing was recorded/);
      cluster.options.maxRedirections = 24;
      expect(await cluster.get(key)).toBe('1');
    } finally {
      await cluster.del(key).catch(() => undefined);
      cluster.disconnect();
    }
  });
});
