// Rule (README "INTERLOCK_REDIS_MIN_REPLICAS": what the gate acts on is held by that many replicas "so a failover
// cannot lose it"; I4 live authority): with INTERLOCK_REDIS_MIN_REPLICAS=N, a revoke and a cap are answered only once N
// replicas of their master hold them, so a failover cannot bring back an approval answered revoked, or a cap answered
// lowered. While the replicas do not hold it, the call answers redis_not_durable (503, retryable), and the same call
// again answers once they do. With N = 0 a revoke sends what it sent before, and no WAIT.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InterlockError } from '../../src/core/errors.js';
import { createRedisApprovals } from '../../src/redis/approvals.js';
import { createKeys } from '../../src/redis/keys.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { commandsNaming } from '../support/count-commands.js';
import { approvalTerms, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import type { PrivateRedis } from '../support/private-redis.js';
import { startReplicatedPair, type ReplicatedPair } from './replicated-pair.js';

/** The call's answer once it stops answering redis_not_durable (the replica caught up), as an operator retrying it. */
async function retried<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof InterlockError && error.code === 'redis_not_durable') || attempt >= 30) throw error;
    }
  }
}

const waitsServed = async (redis: Redis) => Number(/cmdstat_wait:calls=(\d+)/.exec(String(await redis.info('commandstats')))?.[1] ?? 0);

describe('revokes and caps under INTERLOCK_REDIS_MIN_REPLICAS', () => {
  let primary: PrivateRedis;
  let replica: PrivateRedis;
  let onPrimary: Redis;
  let onReplica: Redis;
  let pair: ReplicatedPair;
  const nodes: TestNode[] = [];
  beforeAll(async () => {
    pair = await startReplicatedPair();
    ({ primary, replica, onPrimary, onReplica } = pair);
  }, 60_000);
  afterAll(async () => {
    replica.process.kill('SIGCONT');
    for (const node of nodes) await node.close().catch(() => undefined);
    await pair.stop();
  });

  async function node(): Promise<TestNode> {
    const config = testConfig({ redisUrl: primary.url, unsafeDurability: false, redisMinReplicas: 1, redisWaitMs: 1_000, keyPrefix: `ar${randomBytes(5).toString('hex')}` });
    const started = await startNode({ config, target: createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs }), key: testKey().key });
    nodes.push(started);
    return started;
  }

  it('answers a revoke and a cap once the replica holds them', async () => {
    const a = await node();
    const terms = approvalTerms({ scope: 'payment:pi_held' });
    await a.approvals.grant(terms);

    const revoked = await a.approvals.revoke(terms.id, 'ana@security');
    const cap = await a.approvals.setSubjectCap('payment:pi_held', 500);

    const keys = createKeys(a.config.keyPrefix);
    expect({
      alreadyRevoked: revoked.alreadyRevoked,
      cap: cap.limitCents,
      replicaRevoked: await onReplica.hget(keys.approval('payment:pi_held', terms.id), 'revoked'),
      replicaCap: await onReplica.hget(keys.subject('payment:pi_held'), 'limit'),
    }).toEqual({ alreadyRevoked: false, cap: 500, replicaRevoked: '1', replicaCap: '500' });
  });

  it('refuses to answer a revoke or a cap the replica does not hold (redis_not_durable, 503), and answers the same call again once it does', async () => {
    const a = await node();
    const terms = approvalTerms({ scope: 'payment:pi_behind' });
    await a.approvals.grant(terms);
    await a.approvals.setSubjectCap('payment:pi_behind', 3_000);
    const keys = createKeys(a.config.keyPrefix);

    // The replica stops answering (a stalled host, a partition): it takes nothing more and acknowledges nothing.
    replica.process.kill('SIGSTOP');
    let revoke: unknown;
    let cap: unknown;
    try {
      revoke = await a.approvals.revoke(terms.id, 'ana@security').catch((error: unknown) => error);
      cap = await a.approvals.setSubjectCap('payment:pi_behind', 100).catch((error: unknown) => error);
    } finally {
      replica.process.kill('SIGCONT');
    }
    expect(revoke).toBeInstanceOf(InterlockError);
    expect(revoke).toMatchObject({ code: 'redis_not_durable', status: 503, retryable: true, message: expect.stringMatching(/revoked on its Redis master.*failover could still lose the revoke.*Revoke it again/) });
    expect(cap).toMatchObject({ code: 'redis_not_durable', status: 503, retryable: true, message: expect.stringMatching(/cap of 100 on payment:pi_behind is set on its Redis master.*Set it again/) });
    // Written on the master all the same: dispatch there refuses under the approval meanwhile.
    expect(await onPrimary.hget(keys.approval('payment:pi_behind', terms.id), 'revoked')).toBe('1');

    // The replica back: the same calls again answer, now that it holds them.
    const again = await retried(() => a.approvals.revoke(terms.id, 'ana@security'));
    const capAgain = await retried(() => a.approvals.setSubjectCap('payment:pi_behind', 100));
    expect({
      alreadyRevoked: again.alreadyRevoked,
      revokedBy: again.revokedBy,
      cap: capAgain.limitCents,
      replicaRevoked: await onReplica.hget(keys.approval('payment:pi_behind', terms.id), 'revoked'),
      replicaCap: await onReplica.hget(keys.subject('payment:pi_behind'), 'limit'),
    }).toEqual({ alreadyRevoked: true, revokedBy: 'ana@security', cap: 100, replicaRevoked: '1', replicaCap: '100' });
  }, 60_000);

  it('sends a revoke\'s two commands and no WAIT when INTERLOCK_REDIS_MIN_REPLICAS is 0, even with the replica stopped', async () => {
    const redis = new Redis(primary.url);
    const keys = createKeys(`ar${randomBytes(5).toString('hex')}`);
    const approvals = createRedisApprovals({ redis, keys, minReplicas: 0, replicaWaitMs: 1_000 });
    try {
      const warm = approvalTerms({ scope: 'payment:pi_fast' });
      const terms = approvalTerms({ scope: 'payment:pi_fast' });
      await approvals.grant(warm);
      await approvals.grant(terms);
      // The script loaded by a first revoke, so the one counted sends what every later revoke sends.
      await approvals.revoke(warm.id, 'ana@security');
      const sent = commandsNaming(redis);
      const waitsBefore = await waitsServed(onPrimary);
      replica.process.kill('SIGSTOP');
      let revoked;
      try {
        revoked = await approvals.revoke(terms.id, 'ana@security');
      } finally {
        replica.process.kill('SIGCONT');
      }
      expect({ alreadyRevoked: revoked.alreadyRevoked, sent: sent.naming(terms.id), waits: (await waitsServed(onPrimary)) - waitsBefore }).toEqual({ alreadyRevoked: false, sent: ['hget', 'evalsha'], waits: 0 });
    } finally {
      redis.disconnect();
    }
  });
});
