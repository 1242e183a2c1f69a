// Redis stores for one CLI command, opened and closed around it. No heartbeat and no sends: the CLI reads the
// journal and manages approvals, it never dispatches.
import { Redis } from 'ioredis';
import { createRedisClient, type RedisClient } from '../redis/client.js';
import { loadConfig, type Config } from '../config.js';
import { loadOrCreateSigningKey } from '../keys/key-store.js';
import { createRedisApprovals, type Approvals } from '../redis/approvals.js';
import { createRedisJournal, type Journal } from '../redis/journal.js';
import { createKeys } from '../redis/keys.js';

export async function withStores(run: (stores: { journal: Journal; approvals: Approvals; config: Config; redis: RedisClient }) => Promise<void>): Promise<void> {
  const config = loadConfig();
  const redis: RedisClient = config.redisCluster ? createRedisClient(config) : new Redis(config.redisUrl, { maxRetriesPerRequest: 2, retryStrategy: (times) => (times > 2 ? null : 200) });
  redis.on('error', () => undefined);
  try {
    await redis.ping();
  } catch (error) {
    process.stderr.write(`Cannot reach Redis at ${config.redisUrl} (${(error as Error).message}). Start Redis or set REDIS_URL.\n`);
    process.exitCode = 2;
    redis.disconnect();
    return;
  }
  try {
    const keys = createKeys(config.keyPrefix);
    const { key } = loadOrCreateSigningKey(config);
    await run({ journal: createRedisJournal({ redis, keys, signingKey: key }), approvals: createRedisApprovals({ redis, keys }), config, redis });
  } finally {
    await redis.quit().catch(() => undefined);
  }
}
