// Rule (README "What the contract rests on", INTERLOCK_REDIS_MIN_REPLICAS), on a Redis Cluster: a Stripe event is
// answered 200 only once the replica of the master holding what the answer rests on holds it: its job, on the master of
// the queue's slot, or, for a duplicate whose job is gone, its marker, on the index's master (another master here).
// While that replica does not, the route answers 503 (redis_not_durable); a replica of the other master is not asked.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFactsQueue } from '../../queues/facts.js';
import { openStores, type StripeEvent } from '../../src/interlock.js';
import { createKeys, queueNames } from '../../src/redis/keys.js';
import { testConfig, testKey } from '../support/harness.js';
import { ownerOf, replicasSynced, startCluster } from '../support/private-cluster.js';
import type { PrivateRedis } from '../support/private-redis.js';

const DURABLE = ['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--repl-diskless-sync-delay', '0'];

let servers: PrivateRedis[] = [];

beforeAll(async () => {
  servers = await startCluster([DURABLE, DURABLE, DURABLE, DURABLE, DURABLE, DURABLE], 1);
  await replicasSynced(servers);
}, 90_000);

afterAll(async () => {
  for (const server of servers) server.process.kill('SIGCONT');
  await Promise.all(servers.map((server) => server.stop()));
});

const event = (): StripeEvent => ({ id: `evt_${randomBytes(8).toString('hex')}`, type: 'refund.failed', data: { object: { id: 're_1', object: 'refund', status: 'failed' } } });

/** `work`'s answer, or the code it was refused with, with `server` stopped (a stalled host) meanwhile. */
async function stopped(server: PrivateRedis, work: () => Promise<{ duplicate: boolean }>): Promise<{ duplicate: boolean } | string> {
  server.process.kill('SIGSTOP');
  try {
    return await work().catch((error: unknown) => String((error as { code?: unknown }).code));
  } finally {
    server.process.kill('SIGCONT');
  }
}

describe('the facts intake under INTERLOCK_REDIS_MIN_REPLICAS=1 on a cluster', () => {
  it("waits for the replica of the job's master, or of the marker's for a duplicate whose job is gone, and no other", async () => {
    const admin = new Redis(servers[0]?.url ?? '');
    // A key prefix whose queue and index are served by two masters, each with a replica.
    let prefix = '';
    let jobs = { master: 0, replica: 0 };
    let index = { master: 0, replica: 0 };
    for (let tries = 0; jobs.master === index.master; tries += 1) {
      if (tries > 50) throw new Error('no key prefix puts the queue and the index on two masters');
      prefix = `ric${randomBytes(5).toString('hex')}`;
      jobs = await ownerOf(admin, `${queueNames(prefix).prefix}:facts:x`);
      index = await ownerOf(admin, createKeys(prefix).replicaMark);
    }
    admin.disconnect();
    const jobsReplica = servers.find((server) => server.port === jobs.replica);
    const indexReplica = servers.find((server) => server.port === index.replica);
    if (jobsReplica === undefined || indexReplica === undefined) throw new Error('a master without a replica');

    const config = testConfig({ redisUrl: servers[0]?.url ?? '', redisCluster: true, redisMinReplicas: 1, redisWaitMs: 2_000, keyPrefix: prefix });
    const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
    const facts = createFactsQueue(stores);
    try {
      await facts.queue.waitUntilReady();
      const fresh = event();
      const gone = event();
      expect(await facts.accept(gone)).toEqual({ duplicate: false });
      await facts.queue.remove(gone.id);
      const answers = {
        // A new event rests on its job: the index master's replica stopped changes nothing, the job master's refuses it.
        freshIndexReplicaStopped: await stopped(indexReplica, () => facts.accept(fresh)),
        againJobsReplicaStopped: await stopped(jobsReplica, () => facts.accept(fresh)),
        // A duplicate whose job is gone rests on its marker: the other way round.
        goneJobsReplicaStopped: await stopped(jobsReplica, () => facts.accept(gone)),
        goneIndexReplicaStopped: await stopped(indexReplica, () => facts.accept(gone)),
        goneAgain: await facts.accept(gone),
      };
      expect(answers).toEqual({
        freshIndexReplicaStopped: { duplicate: false },
        againJobsReplicaStopped: 'redis_not_durable',
        goneJobsReplicaStopped: { duplicate: true },
        goneIndexReplicaStopped: 'redis_not_durable',
        goneAgain: { duplicate: true },
      });
    } finally {
      await facts.close();
      await stores.close();
    }
  }, 90_000);
});
