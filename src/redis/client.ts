// The Redis connection: one server, or a Redis Cluster reached through any of its nodes. Every script's keys
// share one hash tag (keys.ts), so the gate runs the same on both.
import { Cluster, Redis } from 'ioredis';

export type RedisClient = Redis | Cluster;

export function createRedisClient(options: { redisUrl: string; redisCluster: boolean }): RedisClient {
  if (!options.redisCluster) return new Redis(options.redisUrl, { maxRetriesPerRequest: 3 });
  const url = new URL(options.redisUrl);
  const auth = url.password === '' ? {} : { password: decodeURIComponent(url.password), ...(url.username === '' ? {} : { username: decodeURIComponent(url.username) }) };
  return new Cluster([{ host: url.hostname, port: Number(url.port || 6379) }], { redisOptions: { maxRetriesPerRequest: 3, ...auth } });
}

/** The servers that acknowledge writes: the one server, or every cluster master. */
export function writableNodes(client: RedisClient): Redis[] {
  return client instanceof Cluster ? client.nodes('master') : [client];
}

/** Redis server time in ms: the clock every claim, deadline and entry is measured on. */
export async function serverTime(client: RedisClient): Promise<number> {
  const [seconds, micros] = await client.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}
