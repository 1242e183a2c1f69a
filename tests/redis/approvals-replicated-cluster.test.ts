// Rule (README "INTERLOCK_REDIS_MIN_REPLICAS"; I4 live authority), on a Redis Cluster: a revoke is answered only once
// the replica of the master serving its approval holds it, so a failover of that master cannot bring the approval
// back; while that replica does not, the revoke answers redis_not_durable (503, retryable). A replica of another
// master is not asked.
import { randomBytes } from 'node:crypto';
import { Redis, type Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisApprovals, type Approvals } from '../../src/redis/approvals.js';
import { createRedisClient } from '../../src/redis/client.js';
import { createKeys, type Keys } from '../../src/redis/keys.js';
import { approvalTerms } from '../support/harness.js';
import type { PrivateRedis } from '../support/private-redis.js';
import { ownerOf, replicasSynced, startCluster } from '../support/private-cluster.js';

const DURABLE = ['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--repl-diskless-sync-delay', '0'];

describe('revokes under INTERLOCK_REDIS_MIN_REPLICAS=1 on a cluster', () => {
  let servers: PrivateRedis[] = [];
  let client: Cluster;
  let keys: Keys;
  let approvals: Approvals;
  beforeAll(async () => {
    servers = await startCluster([DURABLE, DURABLE, DURABLE, DURABLE, DURABLE, DURABLE], 1);
    await replicasSynced(servers);
    client = createRedisClient({ redisUrl: servers[0]?.url ?? '', redisCluster: true, redisCommandTimeoutMs: 5_000 }) as Cluster;
    client.on('error', () => undefined);
    keys = createKeys(`arc${randomBytes(5).toString('hex')}`);
    approvals = createRedisApprovals({ redis: client, keys, minReplicas: 1, replicaWaitMs: 1_000 });
  }, 90_000);
  afterAll(async () => {
    client.disconnect();
    for (const server of servers) server.process.kill('SIGCONT');
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('answers a revoke once its master\'s replica holds it, another master\'s replica stopped, and refuses it while its own is stopped', async () => {
    const admin = new Redis(servers[0]?.url ?? '');
    const subject = 'payment:pi_cluster';
    const owner = await ownerOf(admin, keys.subject(subject));
    const elsewhere = await Promise.all(['payment:pi_a', 'payment:pi_b', 'payment:pi_c', 'payment:pi_d', 'payment:pi_e'].map((other) => ownerOf(admin, keys.subject(other))));
    admin.disconnect();
    const replica = servers.find((server) => server.port === owner.replica);
    const otherReplica = elsewhere.find((other) => other.master !== owner.master && other.replica > 0)?.replica;
    const other = servers.find((server) => server.port === otherReplica);
    if (replica === undefined || other === undefined) throw new Error('no replica of the approval\'s master, or of another');
    const onReplica = new Redis(replica.url);
    try {
      await onReplica.readonly();
      const first = approvalTerms({ scope: subject });
      const second = approvalTerms({ scope: subject });
      await approvals.grant(first);
      await approvals.grant(second);

      // The replica of another master, stopped, is not asked.
      other.process.kill('SIGSTOP');
      let revoked;
      try {
        revoked = await approvals.revoke(first.id, 'ana@security');
      } finally {
        other.process.kill('SIGCONT');
      }
      expect({ alreadyRevoked: revoked.alreadyRevoked, onReplica: await onReplica.hget(keys.approval(subject, first.id), 'revoked') }).toEqual({ alreadyRevoked: false, onReplica: '1' });

      replica.process.kill('SIGSTOP');
      let refused: unknown;
      try {
        refused = await approvals.revoke(second.id, 'ana@security').catch((error: unknown) => error);
      } finally {
        replica.process.kill('SIGCONT');
      }
      expect(refused).toMatchObject({ code: 'redis_not_durable', status: 503, retryable: true });
    } finally {
      onReplica.disconnect();
    }
  }, 60_000);
});
