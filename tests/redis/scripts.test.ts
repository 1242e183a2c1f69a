// The script runner sends every Lua script by its SHA and loads it with EVAL when Redis does not have it (a restart
// or SCRIPT FLUSH empties the cache). It builds the commands itself, so these check what reaches Redis: the keys and
// arguments in order, as strings, and the answer parsed.
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient } from '../../src/redis/client.js';
import { createScriptRunner } from '../../src/redis/scripts.js';
import { commandsNaming } from '../support/count-commands.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

// A Redis of its own: SCRIPT FLUSH would empty the script cache of every other test's Redis too.
let server: PrivateRedis;
let redis: Redis;
const prefix = 'scripts-test';

// Connected first: a command sent before the connection is up passes through sendCommand twice (queued, then sent).
beforeAll(async () => {
  server = await startPrivateRedis(['--save', '']);
  redis = createRedisClient({ redisUrl: server.url, redisCluster: false, redisCommandTimeoutMs: 5_000 }) as Redis;
  await redis.ping();
});

afterAll(async () => {
  await redis?.quit();
  await server?.stop();
});

describe('the script runner', () => {
  it('passes keys and arguments in order, numbers as their decimal text, and parses the answer', async () => {
    const seen = commandsNaming(redis);
    const run = createScriptRunner(redis);
    const key = `${prefix}:heartbeat`;
    const reply = await run<{ status: string; now: number }>('beat-1', [key], ['worker-a', 4_000, 1]);
    expect(reply.status).toBe('OK');
    expect(typeof reply.now).toBe('number');
    // A new Redis has never seen the script: its SHA is refused (NOSCRIPT), and the source is sent.
    expect(seen.naming(key)).toEqual(['evalsha', 'eval']);
    // beat-1 sets the key to ARGV[1] for ARGV[2] ms.
    expect(await redis.get(key)).toBe('worker-a');
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(4_000);
  });

  it('loads a script Redis has forgotten with EVAL, and runs it by its SHA again afterwards', async () => {
    const seen = commandsNaming(redis);
    const run = createScriptRunner(redis);
    await redis.script('FLUSH');
    const key = `${prefix}:flushed`;
    expect((await run<{ status: string }>('beat-1', [key], ['worker-b', 4_000, 1])).status).toBe('OK');
    expect((await run<{ status: string }>('beat-1', [key], ['worker-b', 4_000, 1])).status).toBe('OK');
    expect(seen.naming(key)).toEqual(['evalsha', 'eval', 'evalsha']);
  });

  it('refuses the wrong number of keys before sending anything', async () => {
    const run = createScriptRunner(redis);
    await expect(run('beat-1', [], [])).rejects.toThrow('Script beat-1 takes 1 keys, got 0');
  });
});
