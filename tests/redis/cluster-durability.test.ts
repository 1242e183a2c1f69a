// Rule (redis/durability.ts inspectDurability, redis/client.ts writableNodesNow): the durability of a Redis Cluster is
// read on the masters the cluster has now, from its slot map, not on the masters the client happens to hold
// connections to. A new cluster client knows only its seed until its slots are loaded: createInterlock, which checks
// before any command, read the seed alone and started on a cluster whose other masters keep nothing on disk. A client
// whose master failed over keeps the survivors until a command is MOVED: the monitor read those alone and kept saying
// durable while a replica with no append-only file served the dead master's slots.
import { Cluster, Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInterlock } from '../../src/interlock.js';
import { createDurabilityMonitor } from '../../src/redis/durability.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { createKeys } from '../../src/redis/keys.js';
import { approvalTerms, refundProposal, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import type { PrivateRedis } from '../support/private-redis.js';
import { failedOver, ownerOf, replicasSynced, startCluster } from '../support/private-cluster.js';

const DURABLE = ['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--cluster-node-timeout', '1000', '--repl-diskless-sync-delay', '0'];
const LAX = ['--appendonly', 'no', '--cluster-node-timeout', '1000', '--repl-diskless-sync-delay', '0'];

/**
 * Six durable servers, three masters with a replica each, for the describe block that calls this. Its tests read
 * `servers` once the block has started them and push the nodes they start to `nodes`; those close first, and a server
 * a test stopped (SIGSTOP) is resumed, before the servers stop.
 */
function replicatedCluster(): { servers: PrivateRedis[]; nodes: TestNode[] } {
  const rig = { servers: [] as PrivateRedis[], nodes: [] as TestNode[] };
  beforeAll(async () => {
    rig.servers = await startCluster([DURABLE, DURABLE, DURABLE, DURABLE, DURABLE, DURABLE], 1);
    await replicasSynced(rig.servers);
  }, 90_000);
  afterAll(async () => {
    for (const node of rig.nodes) await node.close().catch(() => undefined);
    for (const server of rig.servers) {
      try {
        server.process.kill('SIGCONT');
      } catch {
        /* gone already */
      }
    }
    await Promise.all(rig.servers.map((server) => server.stop()));
  });
  return rig;
}

describe('a cluster whose seed is durable and whose other masters are not', () => {
  let servers: PrivateRedis[] = [];
  beforeAll(async () => {
    servers = await startCluster([DURABLE, LAX, LAX]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('is refused by createInterlock, which checks before any command', async () => {
    const config = testConfig({ redisUrl: servers[0]?.url ?? '', redisCluster: true, unsafeDurability: false });
    const started = createInterlock({ config, target: createMemoryTarget({ tier: 1, sendTimeoutMs: 1_000 }), signingKey: testKey().key, logger: pino({ level: 'silent' }) });
    try {
      await expect(started).rejects.toMatchObject({ name: 'DurabilityError', message: expect.stringContaining('append-only file is off') });
    } finally {
      await (await started.catch(() => null))?.close();
    }
  });
});

describe('a master that fails over to a replica with no append-only file', () => {
  let servers: PrivateRedis[] = [];
  beforeAll(async () => {
    // The first three are masters, the last three their replicas.
    servers = await startCluster([DURABLE, DURABLE, DURABLE, LAX, LAX, LAX], 1);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('makes the running monitor read the promoted replica and say Redis is not durable', async () => {
    const client = new Cluster([{ host: '127.0.0.1', port: servers[0]?.port ?? 0 }], { redisOptions: { maxRetriesPerRequest: 2 } });
    client.on('error', () => undefined);
    const monitor = createDurabilityMonitor({ redis: client, optOut: false, intervalMs: 500, logger: pino({ level: 'silent' }), checkTimeoutMs: 6_000 });
    const admin = new Redis(servers[0]?.url ?? '');
    try {
      await client.ping();
      expect((await monitor.check()).durable).toBe(true);
      await replicasSynced(servers);
      const victim = servers.find((server) => server.port !== servers[0]?.port && client.nodes('master').some((node) => node.options.port === server.port));
      await victim?.kill('SIGKILL');
      await failedOver(admin, victim?.port ?? 0);
      // Every reading after the failover is not durable. The first may fail outright ("unknown": a node that has not
      // yet heard of the failover can still hand out the dead master in its slot map); within a few checks the gossip
      // has spread and the reading names the promoted replica's missing append-only file.
      const readings: string[] = [];
      await expect
        .poll(async () => {
          const reading = await monitor.check();
          readings.push(reading.durable ? 'durable' : reading.problems.join(' '));
          return readings;
        }, { timeout: 20_000, interval: 500 })
        .toContainEqual(expect.stringContaining('append-only file is off'));
      expect(readings).not.toContain('durable');
    } finally {
      admin.disconnect();
      await monitor.stop();
      client.disconnect();
    }
  }, 90_000);
});

// Rule (redis/journal.ts replicated): with INTERLOCK_REDIS_MIN_REPLICAS the WAIT is asked of the master that holds the
// effect, not of every master: after another shard failed over (its promoted replica has no replica of its own until
// the dead master returns), every send of the deployment was held back (IN_FLIGHT, then UNRESOLVED:replicas_behind)
// though the effect's DISPATCHED was held by its own master's replica.
describe('INTERLOCK_REDIS_MIN_REPLICAS=1 after another shard failed over', () => {
  const rig = replicatedCluster();

  it('sends an effect whose own master\'s replica acknowledged its DISPATCHED', async () => {
    const { servers, nodes } = rig;
    const config = testConfig({ redisUrl: servers[0]?.url ?? '', redisCluster: true, unsafeDurability: false, redisMinReplicas: 1, redisWaitMs: 1_000 });
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
    const keys = createKeys(config.keyPrefix);
    const admin = new Redis(servers[0]?.url ?? '');
    const owners = await Promise.all(Array.from({ length: 40 }, (_, i) => `pi_shard_${i}`).map(async (pi) => ({ pi, ...(await ownerOf(admin, keys.subject(`payment:${pi}`))) })));
    // The shard that fails over is not the index's: that one holds every effect's binding, so its losing its replica
    // holds sends back (the case below).
    const index = await ownerOf(admin, keys.effectPartitions);
    const dying = owners.find((owner) => owner.master !== index.master);
    const healthy = owners.find((owner) => owner.master !== dying?.master);
    admin.disconnect();
    if (dying === undefined || healthy === undefined) throw new Error('no two shards among 40 payments');
    expect(healthy.replica).toBeGreaterThan(0);
    await servers.find((server) => server.port === dying.master)?.kill('SIGKILL');
    const other = new Redis(servers.find((server) => server.port === healthy.master)?.url ?? '');
    try {
      await failedOver(other, dying.master);
    } finally {
      other.disconnect();
    }
    const client = new Cluster([{ host: '127.0.0.1', port: healthy.master }], { redisOptions: { maxRetriesPerRequest: 2 } });
    client.on('error', () => undefined);
    const node = await startNode({ config, target, key: testKey().key, redis: client });
    nodes.push(node);
    const terms = approvalTerms({ maxUses: 5, scope: `payment:${healthy.pi}` });
    await node.approvals.grant(terms);
    target.world.set(`payment:${healthy.pi}`, { chargebacks: [], refunded_by_others: 0 });
    const result = await node.gate.submit(refundProposal({ approval: terms.id, paymentIntent: healthy.pi }));
    expect({ outcome: result.outcome, reason: result.reason ?? null }).toEqual({ outcome: 'COMMITTED', reason: null });
  }, 120_000);
});

// Rule (redis/journal.ts replicated): with INTERLOCK_REDIS_MIN_REPLICAS=1 on a cluster, a send waits until the replicas
// of every master holding part of the effect acknowledged it: the effect's own master (its DISPATCHED) and the index's
// (its binding and its open-dispatch entry, through which recovery finds open dispatches and receipts find chains).
// Only the effect's own master was asked: with the index master's replica behind, the refund was sent, and a failover
// of that master then lost the binding and the entry, leaving a refund that moved money open, with no receipt and out
// of recovery's sight.
describe('INTERLOCK_REDIS_MIN_REPLICAS=1 while the index master\'s replica is behind', () => {
  const rig = replicatedCluster();

  it('does not send an effect of another shard until that replica has its binding, then sends it once', async () => {
    const { servers, nodes } = rig;
    const config = testConfig({ redisUrl: servers[0]?.url ?? '', redisCluster: true, unsafeDurability: false, redisMinReplicas: 1, redisWaitMs: 1_000 });
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
    const keys = createKeys(config.keyPrefix);
    const admin = new Redis(servers[0]?.url ?? '');
    const index = await ownerOf(admin, keys.effectPartitions);
    const owners = await Promise.all(Array.from({ length: 40 }, (_, i) => `pi_idx_${i}`).map(async (pi) => ({ pi, ...(await ownerOf(admin, keys.subject(`payment:${pi}`))) })));
    admin.disconnect();
    const payment = owners.find((owner) => owner.master !== index.master);
    if (payment === undefined) throw new Error('no payment outside the index shard among 40');
    expect(index.replica).toBeGreaterThan(0);
    const client = new Cluster([{ host: '127.0.0.1', port: payment.master }], { redisOptions: { maxRetriesPerRequest: 2 } });
    client.on('error', () => undefined);
    const node = await startNode({ config, target, key: testKey().key, redis: client });
    nodes.push(node);
    const subject = `payment:${payment.pi}`;
    target.world.set(subject, { chargebacks: [], refunded_by_others: 0 });
    const terms = approvalTerms({ maxUses: 5, scope: subject });
    await node.approvals.grant(terms);

    // The index master's replica stops taking the stream: the binding written below reaches only its master.
    const indexReplica = servers.find((server) => server.port === index.replica);
    indexReplica?.process.kill('SIGSTOP');
    const proposal = refundProposal({ approval: terms.id, paymentIntent: payment.pi });
    const held = await node.gate.submit(proposal);
    const effectId = node.gate.effectIdOf(proposal);
    expect({ outcome: held.outcome, reason: held.reason ?? '', landed: target.landedCount(effectId) }).toEqual({ outcome: 'IN_FLIGHT', reason: expect.stringContaining('replicas'), landed: 0 });

    // Once it catches up, the effect is sent, once, and its receipt is there.
    indexReplica?.process.kill('SIGCONT');
    await expect.poll(async () => (await node.gate.submit(proposal)).outcome, { timeout: 20_000, interval: 500 }).toMatch(/^COMMITTED/);
    expect({ landed: target.landedCount(effectId), receipt: (await node.journal.receipt(effectId)) !== null }).toEqual({ landed: 1, receipt: true });
  }, 120_000);

  // Rule (redis/replica-wait.ts): Redis WAIT blocks the connection it is sent on. WAITs go on connections of their own,
  // one round at a time per master shared by every send that asked before it: several sends held back at once
  // are each held back within about two WAIT timeouts (not one timeout more per send queued before it), and the
  // process's other commands to that master (a binding, an effect's lookup) do not wait behind them.
  it('holds several sends back at once within two WAIT timeouts, without holding up the index master\'s other commands', async () => {
    const { servers, nodes } = rig;
    const config = testConfig({ redisUrl: servers[0]?.url ?? '', redisCluster: true, unsafeDurability: false, redisMinReplicas: 1, redisWaitMs: 1_000 });
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
    const keys = createKeys(config.keyPrefix);
    const admin = new Redis(servers[0]?.url ?? '');
    const index = await ownerOf(admin, keys.effectPartitions);
    const owners = await Promise.all(Array.from({ length: 60 }, (_, i) => `pi_ser_${i}`).map(async (pi) => ({ pi, ...(await ownerOf(admin, keys.subject(`payment:${pi}`))) })));
    admin.disconnect();
    // Three on the index's own master (one round asks both), three on others (their own master asked beside it).
    const payments = [...owners.filter((owner) => owner.master === index.master).slice(0, 3), ...owners.filter((owner) => owner.master !== index.master).slice(0, 3)];
    expect(payments).toHaveLength(6);
    const client = new Cluster([{ host: '127.0.0.1', port: index.master }], { redisOptions: { maxRetriesPerRequest: 2 } });
    client.on('error', () => undefined);
    const node = await startNode({ config, target, key: testKey().key, redis: client });
    nodes.push(node);
    const proposals = [];
    for (const payment of payments) {
      const subject = `payment:${payment.pi}`;
      target.world.set(subject, { chargebacks: [], refunded_by_others: 0 });
      const terms = approvalTerms({ maxUses: 5, scope: subject });
      await node.approvals.grant(terms);
      proposals.push(refundProposal({ approval: terms.id, paymentIntent: payment.pi }));
    }
    const knownTerms = approvalTerms({ maxUses: 5, scope: `payment:${payments[3]?.pi}` });
    await node.approvals.grant(knownTerms);
    const known = await node.gate.submit(refundProposal({ requestId: 'ser-known', approval: knownTerms.id, paymentIntent: payments[3]?.pi ?? '' }));
    expect(known.outcome).toBe('COMMITTED');

    servers.find((server) => server.port === index.replica)?.process.kill('SIGSTOP');
    const started = performance.now();
    const held = Promise.all(proposals.map(async (proposal) => ({ outcome: (await node.gate.submit(proposal)).outcome, ms: performance.now() - started })));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const readAt = performance.now();
    const partition = await node.journal.partitionOf(known.effectId);
    const readMs = performance.now() - readAt;
    const answers = await held;
    servers.find((server) => server.port === index.replica)?.process.kill('SIGCONT');
    const slowest = Math.max(...answers.map((answer) => answer.ms));
    expect({ partition, outcomes: [...new Set(answers.map((answer) => answer.outcome))], heldBackWithinTwoWaits: slowest < 2_500, readNotBehindAWait: readMs < 900 }, JSON.stringify({ slowest, readMs })).toEqual({ partition: `payment:${payments[3]?.pi}`, outcomes: ['IN_FLIGHT'], heldBackWithinTwoWaits: true, readNotBehindAWait: true });
  }, 120_000);
});
