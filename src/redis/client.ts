// The Redis connection: one server, or a Redis Cluster reached through any of its nodes. Every script's keys
// share one hash tag (keys.ts), so the gate runs the same on both.
import { Cluster, Redis } from 'ioredis';

export type RedisClient = Redis | Cluster;

export function createRedisClient(options: { redisUrl: string; redisCluster: boolean }, behaviour: { failFast?: boolean } = {}): RedisClient {
  // A one-shot command (the CLI) gives up after two reconnects instead of waiting on a Redis that is not there.
  const failFast = behaviour.failFast ? { maxRetriesPerRequest: 2, retryStrategy: (times: number) => (times > 2 ? null : 200) } : { maxRetriesPerRequest: 3 };
  if (!options.redisCluster) return batchWrites(new Redis(options.redisUrl, failFast));
  const url = new URL(options.redisUrl);
  const auth = url.password === '' ? {} : { password: decodeURIComponent(url.password), ...(url.username === '' ? {} : { username: decodeURIComponent(url.username) }) };
  const cluster = new Cluster([{ host: url.hostname, port: Number(url.port || 6379) }], { redisOptions: { ...failFast, ...auth }, ...(behaviour.failFast ? { clusterRetryStrategy: (times: number) => (times > 2 ? null : 200) } : {}) });
  cluster.on('+node', (node: Redis) => batchWrites(node));
  return cluster;
}

/**
 * Commands written in one turn of the event loop leave the process in one write: the connection's socket is corked
 * at the first write and uncorked on the next tick. A busy worker has many effects in flight, and a write syscall
 * per command was the largest cost of its Redis traffic; the commands, their order and their replies are the same.
 * (Unlike ioredis's auto-pipelining, no command waits for a batch to fill.)
 */
export function batchWrites(redis: Redis): Redis {
  const patch = (): void => {
    const stream = (redis as unknown as { stream?: { write: (...args: unknown[]) => boolean; cork(): void; uncork(): void; batched?: boolean } }).stream;
    if (!stream || stream.batched) return;
    stream.batched = true;
    const write = stream.write.bind(stream);
    let corked = false;
    stream.write = (...args: unknown[]) => {
      if (!corked) {
        corked = true;
        stream.cork();
        process.nextTick(() => {
          corked = false;
          stream.uncork();
        });
      }
      return write(...args);
    };
  };
  redis.on('connect', patch);
  patch();
  return redis;
}

/**
 * Whether an error is Redis not answering (refused or dropped connection, ioredis giving up on a command while it
 * reconnects) rather than a refusal of what was asked: the same call may succeed once Redis is back.
 */
export function isRedisOutage(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return error.name === 'MaxRetriesPerRequestError' || code === 'ECONNREFUSED' || code === 'ECONNRESET' || /Connection is closed|Stream isn't writeable/.test(error.message);
}

/**
 * A connection for BullMQ: its workers block on Redis, and it needs `maxRetriesPerRequest: null` so a command
 * waits out a reconnect instead of failing. Queues get connections of their own, never the gate's.
 */
export function createQueueConnection(options: { redisUrl: string; redisCluster: boolean }): RedisClient {
  if (!options.redisCluster) return new Redis(options.redisUrl, { maxRetriesPerRequest: null, enableReadyCheck: true });
  const url = new URL(options.redisUrl);
  const auth = url.password === '' ? {} : { password: decodeURIComponent(url.password), ...(url.username === '' ? {} : { username: decodeURIComponent(url.username) }) };
  return new Cluster([{ host: url.hostname, port: Number(url.port || 6379) }], { redisOptions: { maxRetriesPerRequest: null, ...auth } });
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
