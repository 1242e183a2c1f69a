// Rule: `serve` with ioredis options in REDIS_URL's query stops at start, exit 2, naming REDIS_URL, before it opens
// anything: `?db=9` on a Redis of 4 databases used to run on database 0 (the database check reads the path, and the
// client stayed on 0 when Redis refused SELECT 9), and `?keyPrefix=` wrote keys under another prefix and then hung
// after BullMQ's own sentence, since the queue connection opened before BullMQ refused the option was never closed.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { inTempDir, runCli } from './run-cli.js';

let redis: PrivateRedis;
beforeAll(async () => {
  redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--databases', '4']);
});
afterAll(async () => {
  await redis?.stop();
});

it.each([['?db=9'], ['?keyPrefix=zz:']])('serve with REDIS_URL=redis://host:port%s exits 2 naming REDIS_URL, never serving', async (query) => {
  await inTempDir('serve-redis-query', async (dir) => {
    const run = await runCli(['serve', '--roles', 'worker,facts'], {
      INTERLOCK_DATA_DIR: join(dir, 'data'),
      REDIS_URL: `${redis.url}${query}`,
      INTERLOCK_KEY_PREFIX: `srvq-${randomBytes(4).toString('hex')}`,
      STRIPE_SECRET_KEY: 'sk_test_serveredisquery',
      STRIPE_API_BASE: 'http://127.0.0.1:1',
      INTERLOCK_LOG_LEVEL: 'error',
    }, { timeoutMs: 15_000 });
    expect(run.stdout).not.toContain('is running');
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('REDIS_URL must not carry ?options');
  });
  // Nothing was written, under any prefix, in any database.
  const sizes = await Promise.all(
    [0, 1, 2, 3].map(async (db) => {
      const client = new Redis(`${redis.url}/${db}`);
      try {
        return await client.dbsize();
      } finally {
        await client.quit();
      }
    }),
  );
  expect(sizes).toEqual([0, 0, 0, 0]);
}, 60_000);
