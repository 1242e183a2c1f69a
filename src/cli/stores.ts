// Redis stores for one CLI command, opened and closed around it. No heartbeat and no sends: the CLI reads the
// journal and manages approvals, it never dispatches.
import { Redis } from 'ioredis';
import { createRedisClient, type RedisClient } from '../redis/client.js';
import { loadConfig, type Config } from '../config.js';
import { loadOrCreateSigningKey } from '../keys/key-store.js';
import { createRedisApprovals, type Approvals } from '../redis/approvals.js';
import { createRedisJournal, type Journal } from '../redis/journal.js';
import { createKeys } from '../redis/keys.js';
import { CliFailure, EXIT_BAD_INPUT } from './failure.js';

export async function withStores(run: (stores: { journal: Journal; approvals: Approvals; config: Config; redis: RedisClient }) => Promise<void>): Promise<void> {
  const config = loadConfig();
  const redis: RedisClient = config.redisCluster ? createRedisClient(config) : new Redis(config.redisUrl, { maxRetriesPerRequest: 2, retryStrategy: (times) => (times > 2 ? null : 200) });
  // Connection errors surface as the failed command below; the event would only repeat them.
  redis.on('error', () => undefined);
  const unreachable = (error: unknown) =>
    new CliFailure(`Cannot reach Redis at ${config.redisUrl} (${error instanceof Error ? error.message : String(error)}); nothing was changed. Start Redis or set REDIS_URL.`, EXIT_BAD_INPUT, { cause: error });
  try {
    await redis.ping();
  } catch (error) {
    redis.disconnect();
    throw unreachable(error);
  }
  try {
    const keys = createKeys(config.keyPrefix);
    const { key } = loadOrCreateSigningKey(config);
    await run({ journal: createRedisJournal({ redis, keys, signingKey: key }), approvals: createRedisApprovals({ redis, keys }), config, redis });
  } catch (error) {
    // A command that failed because the connection went away says so, whatever error the client raised.
    if (redis.status !== 'ready') throw unreachable(error);
    throw error;
  } finally {
    await redis.quit().catch(() => undefined);
  }
}
