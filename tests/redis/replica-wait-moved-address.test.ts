// Rule (README "INTERLOCK_REDIS_MIN_REPLICAS": every DISPATCHED is held by N replicas before its send, so a failover
// cannot lose it; redis/replica-wait.ts: "replicas that acknowledged the mark acknowledged every write the master took
// before it"): the replicas counted must be those of the server that took the DISPATCHED. On a single server reached by
// an address that can move to another server (a failover without sentinel: a DNS name or a virtual IP moved to the
// promoted replica, a proxy), the connection made for WAIT (redis.duplicate(), opened on its own, reconnecting on its
// own) can reach the new master while the process's connection still writes to the old one. The mark and WAIT there
// count the new master's replicas, which never saw the DISPATCHED: the send went, and the DISPATCHED was held by no
// replica of the server that took it. Each round first reads the send's proof (its DISPATCHED's epoch): a server that
// does not hold it answers 0, and the send is held back.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { movableAddress, until, type MovableAddress } from '../support/movable-address.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { createRedisClient } from '../../src/redis/client.js';
import { createKeys } from '../../src/redis/keys.js';
import { approvalTerms, refundProposal, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const DURABLE = ['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--save', '', '--repl-diskless-sync-delay', '0'];

describe('INTERLOCK_REDIS_MIN_REPLICAS=1 across a failover of a single server behind one address', () => {
  let oldMaster: PrivateRedis;
  let promoted: PrivateRedis;
  let itsReplica: PrivateRedis;
  let address: MovableAddress;
  const nodes: TestNode[] = [];
  beforeAll(async () => {
    oldMaster = await startPrivateRedis(DURABLE);
    promoted = await startPrivateRedis([...DURABLE, '--replicaof', '127.0.0.1', String(oldMaster.port)]);
    itsReplica = await startPrivateRedis([...DURABLE, '--replicaof', '127.0.0.1', String(promoted.port)]);
    const a = new Redis(oldMaster.url);
    const b = new Redis(promoted.url);
    await until(async () => /slave0:.*state=online/.test(await a.info('replication')) && /slave0:.*state=online/.test(await b.info('replication')), 'the replicas to be online');
    a.disconnect();
    b.disconnect();
    address = await movableAddress(oldMaster.port);
  }, 60_000);
  afterAll(async () => {
    for (const node of nodes) await node.close().catch(() => undefined);
    await address.close();
    await itsReplica.stop();
    await promoted.stop();
    await oldMaster.stop();
  });

  it('does not send a DISPATCHED that no replica of the server that took it holds', async () => {
    const config = testConfig({ redisUrl: `redis://127.0.0.1:${address.port}`, unsafeDurability: false, redisMinReplicas: 1, redisWaitMs: 1_000 });
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
    const redis = createRedisClient(config);
    const node = await startNode({ config, target, key: testKey().key, redis });
    nodes.push(node);
    const keys = createKeys(config.keyPrefix);
    const terms = approvalTerms({ maxUses: 5, scope: 'payment:pi_moved' });
    await node.approvals.grant(terms);
    target.world.set('payment:pi_moved', { chargebacks: [], refunded_by_others: 0 });

    // The replica is promoted (its own replica follows it) and the address moves to it; the old master, cut off from
    // it, still takes the process's writes on the connection it already has (a partition, a VIP moved away from a live host).
    const p = new Redis(promoted.url);
    await p.replicaof('NO', 'ONE');
    p.disconnect();
    address.point(promoted.port);

    const answer = await node.gate.submit(refundProposal({ approval: terms.id, paymentIntent: 'pi_moved' }));

    const old = new Redis(oldMaster.url);
    const now = new Redis(promoted.url);
    try {
      const oldHas = await old.hexists(keys.effectPartitions, answer.effectId);
      const newHas = await now.hexists(keys.effectPartitions, answer.effectId);
      const oldReplicas = Number(/connected_slaves:(\d+)/.exec(await old.info('replication'))?.[1] ?? -1);
      expect({ outcome: answer.outcome, landed: target.landedCount(answer.effectId), writtenOnOld: oldHas, onTheServerWhoseReplicasAcked: newHas, oldMasterReplicas: oldReplicas }).toEqual({
        outcome: 'IN_FLIGHT',
        landed: 0,
        writtenOnOld: 1,
        onTheServerWhoseReplicasAcked: 0,
        oldMasterReplicas: 0,
      });
    } finally {
      old.disconnect();
      now.disconnect();
    }
  }, 90_000);
});
