// A private durable Redis with one replica of it, online, for tests of what waits for replicas
// (INTERLOCK_REDIS_MIN_REPLICAS). The replica can be stopped (SIGSTOP) to hold writes back; stop() resumes it first.
import { Redis } from 'ioredis';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

export const DURABLE = ['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--save', '', '--repl-diskless-sync-delay', '0'];

/** Polls `check` every 50 ms until it holds, for at most 15 s. */
export async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const giveUp = Date.now() + 15_000;
  while (!(await check())) {
    if (Date.now() > giveUp) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export type ReplicatedPair = { primary: PrivateRedis; replica: PrivateRedis; onPrimary: Redis; onReplica: Redis; stop(): Promise<void> };

export async function startReplicatedPair(): Promise<ReplicatedPair> {
  const primary = await startPrivateRedis(DURABLE);
  const replica = await startPrivateRedis([...DURABLE, '--replicaof', '127.0.0.1', String(primary.port)]);
  const onPrimary = new Redis(primary.url);
  const onReplica = new Redis(replica.url);
  await until(async () => /slave0:.*state=online/.test(await onPrimary.info('replication')), 'the replica to be online');
  return {
    primary,
    replica,
    onPrimary,
    onReplica,
    async stop() {
      replica.process.kill('SIGCONT');
      onPrimary.disconnect();
      onReplica.disconnect();
      await replica.stop();
      await primary.stop();
    },
  };
}
