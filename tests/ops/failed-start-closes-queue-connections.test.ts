// Rule: a start that fails leaves no connection to Redis open, so the process of a refused `serve` exits. A queue
// connection is opened before its BullMQ queue or worker is built; when that constructor throws (BullMQ refuses a
// connection with an ioredis keyPrefix, which a configuration built in code can still give), nothing else holds the
// connection to close it, and it reconnected for as long as Redis answered: the start printed its error and hung.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService } from '../../src/main.js';
import { testConfig } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const dir = mkdtempSync(join(tmpdir(), 'failed-start-'));
let redis: PrivateRedis;
let admin: Redis;

beforeAll(async () => {
  redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
  admin = new Redis(redis.url);
});

afterAll(async () => {
  await admin?.quit();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The clients connected to the private Redis besides `admin`, once they have settled (up to `ms`). */
async function othersConnected(ms: number): Promise<number> {
  const deadline = Date.now() + ms;
  for (;;) {
    const list = String(await admin.client('LIST'));
    const others = list.split('\n').filter((line) => line.trim() !== '' && !line.includes('cmd=client|list')).length;
    if (others === 0 || Date.now() >= deadline) return others;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

it('a worker start refused by a BullMQ constructor closes the queue connection it opened for it', async () => {
  const config = testConfig({ redisUrl: `${redis.url}?keyPrefix=zz:`, dataDir: dir, stripeSecretKey: 'sk_test_failedStartConnections', stripeApiBase: 'http://127.0.0.1:1' });
  await expect(startService(config, ['worker'])).rejects.toThrow('ioredis does not support ioredis prefixes');
  expect(await othersConnected(2_000)).toBe(0);
}, 30_000);
