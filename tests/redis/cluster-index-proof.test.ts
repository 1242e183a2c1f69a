// Rule (journal.ts replicated, replica-wait.ts): on a cluster, the index master's proof is THIS submit's own write
// there, its open-dispatch entry (recovery finds open dispatches only through those). It was the binding
// (effectPartitions[effectId]), which the first bind of an effect id writes for good: a second submit of the same
// request (the first refused before dispatch, its approval not granted yet) binds again with a new entry and
// dispatches; with the index master's address moved to a promoted replica that caught up only to the first submit,
// the binding matched, that server's replicas acked the mark, and the send went, while this submit's entry existed
// only on the old index master, which had no replica at all.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { movableAddress, until, type MovableAddress } from '../support/movable-address.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { createKeys } from '../../src/redis/keys.js';
import { createRedisClient } from '../../src/redis/client.js';
import { approvalTerms, refundProposal, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { ownerOf, replicasSynced, startCluster } from '../support/private-cluster.js';

const DURABLE = ['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--cluster-node-timeout', '5000', '--repl-diskless-sync-delay', '0'];
const PLAIN = ['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--save', '', '--repl-diskless-sync-delay', '0'];

describe('cluster, index master behind a moved address, second submit of a bound effect', () => {
  let servers: PrivateRedis[] = [];
  let promoted: PrivateRedis;
  let itsReplica: PrivateRedis;
  let address: MovableAddress;
  const nodes: TestNode[] = [];
  beforeAll(async () => {
    servers = await startCluster([DURABLE, DURABLE, DURABLE, DURABLE, DURABLE, DURABLE], 1);
    await replicasSynced(servers);
    promoted = await startPrivateRedis(PLAIN);
    itsReplica = await startPrivateRedis([...PLAIN, '--replicaof', '127.0.0.1', String(promoted.port)]);
    const b = new Redis(promoted.url);
    await until(async () => /slave0:.*state=online/.test(await b.info('replication')), 'the promoted server\'s replica');
    b.disconnect();
  }, 120_000);
  afterAll(async () => {
    for (const node of nodes) await node.close().catch(() => undefined);
    await address?.close();
    await itsReplica?.stop();
    await promoted?.stop();
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('does not send when the index server whose replicas acked lacks this submit\'s open-index entry', async () => {
    const keyPrefix = `dp-rebind-${Date.now()}`;
    const keys = createKeys(keyPrefix);
    const admin = new Redis(servers[0]?.url ?? '');
    const index = await ownerOf(admin, keys.effectPartitions);
    let own: { pi: string; master: number; replica: number } | undefined;
    for (let i = 0; i < 40 && own === undefined; i++) {
      const found = await ownerOf(admin, keys.subject(`payment:pi_rebind_${i}`));
      if (found.master !== index.master) own = { pi: `pi_rebind_${i}`, ...found };
    }
    if (own === undefined) throw new Error('no payment on another shard');
    // The index master is announced at an address that can move (a DNS name / VIP in front of it).
    address = await movableAddress(index.master);
    const indexAdmin = new Redis(index.master, '127.0.0.1');
    await indexAdmin.config('SET', 'cluster-announce-bus-port', String(index.master + 10_000));
    await indexAdmin.config('SET', 'cluster-announce-port', String(address.port));
    await until(async () => {
      for (const server of servers.slice(0, 6)) {
        const probe = new Redis(server.url);
        try {
          const slots = (await probe.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
          if (slots.some((range) => Number(range[2][1]) === index.master)) return false;
        } finally {
          probe.disconnect();
        }
      }
      return true;
    }, 'every node to announce the index master at the movable address');

    const ownMasterUrl = `redis://127.0.0.1:${own.master}`;
    const config = testConfig({ redisUrl: ownMasterUrl, redisCluster: true, unsafeDurability: false, redisMinReplicas: 1, redisWaitMs: 1_000, keyPrefix });
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
    const node = await startNode({ config, target, key: testKey().key, redis: createRedisClient(config) });
    nodes.push(node);
    const terms = approvalTerms({ maxUses: 5, scope: `payment:${own.pi}` });
    target.world.set(`payment:${own.pi}`, { chargebacks: [], refunded_by_others: 0 });
    const proposal = refundProposal({ approval: terms.id, paymentIntent: own.pi });

    // First submit: the approval does not exist yet, so it is refused before any dispatch; the effect is bound.
    const first = await node.gate.submit(proposal);
    expect(first.outcome).toMatch(/^REFUSED/);
    await new Promise((resolve) => setTimeout(resolve, 300));

    // The replica that becomes the new index master caught up to here: it holds the binding (and the index as it is now).
    const binding = await indexAdmin.hget(keys.effectPartitions, first.effectId);
    expect(binding).toBe(`payment:${own.pi}`);
    const b = new Redis(promoted.url);
    await b.hset(keys.effectPartitions, first.effectId, binding ?? '');
    const openNow = (await indexAdmin.zrange(keys.openIndex, '0', '-1', 'WITHSCORES')).flat();
    for (let i = 0; i + 1 < openNow.length; i += 2) await b.zadd(keys.openIndex, openNow[i + 1] ?? '0', openNow[i] ?? '');
    // The old index master loses its replica; the address moves to the promoted server (the process keeps its socket).
    await servers.find((server) => server.port === index.replica)?.kill('SIGKILL');
    address.point(promoted.port);

    await node.approvals.grant(terms);
    const second = await node.gate.submit(proposal);

    const oldReplicas = Number(/connected_slaves:(\d+)/.exec(await indexAdmin.info('replication'))?.[1] ?? -1);
    const entryOnOld = (await indexAdmin.zrange(keys.openIndex, '0', '-1')).filter((entry) => entry.startsWith(`${second.effectId}:`)).length;
    const entryOnAcked = (await b.zrange(keys.openIndex, '0', '-1')).filter((entry) => entry.startsWith(`${second.effectId}:`)).length;
    // Control: a request never bound before, in the same rig, IS held back (the binding is not on the acked server).
    const fresh = await node.gate.submit(refundProposal({ approval: terms.id, paymentIntent: own.pi, amount: 100 }));
    expect({ outcome: fresh.outcome, landed: target.landedCount(fresh.effectId) }).toEqual({ outcome: 'IN_FLIGHT', landed: 0 });
    // What happened, for the report.
    console.log(JSON.stringify({ second: second.outcome, landed: target.landedCount(second.effectId), oldReplicas, entryOnOld, entryOnAcked }));
    // Nothing the index master took for this submit is held by a replica (it has none; the server whose replicas
    // acked never saw the entry), so the send must be held back.
    b.disconnect();
    indexAdmin.disconnect();
    admin.disconnect();
    expect({ outcome: second.outcome, landed: target.landedCount(second.effectId) }).toEqual({ outcome: 'IN_FLIGHT', landed: 0 });
  }, 120_000);
});
