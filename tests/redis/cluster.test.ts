// The gate on a real three-master Redis Cluster: every script's keys share the subject's hash tag, so effects on
// different payments live on different masters and each atomic step still runs in one slot. The facts queue's
// batches (one existence check over many job keys, one addBulk) run in the queue's slot too.
import { Cluster, Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFactsQueue } from '../../queues/facts.js';
import { openStores } from '../../src/interlock.js';
import { ProcessCrash } from '../../src/core/target.js';
import { verify } from '../../src/core/verify.js';
import { inspectDurability } from '../../src/redis/durability.js';
import { approvalTerms, kill, refundProposal, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import type { PrivateRedis } from '../support/private-redis.js';
import { startCluster } from '../support/private-cluster.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { keySlot } from '../../src/redis/key-slot.js';

describe('Redis Cluster', () => {
  const servers: PrivateRedis[] = [];
  const nodes: TestNode[] = [];
  const key = testKey();
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: 1_000 });
  let config: ReturnType<typeof testConfig>;
  const cluster = () => new Cluster([{ host: '127.0.0.1', port: servers[0]?.port ?? 0 }], { redisOptions: { maxRetriesPerRequest: 2 } });

  beforeAll(async () => {
    servers.push(...(await startCluster([['--appendonly', 'no'], ['--appendonly', 'no'], ['--appendonly', 'no']])));
    config = testConfig({ redisUrl: servers[0]?.url ?? '', redisCluster: true });
  }, 60_000);

  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.close().catch(() => undefined)));
    await Promise.all(servers.map((server) => server.stop()));
  });

  async function node(): Promise<TestNode> {
    const started = await startNode({ config, target, key: key.key, redis: cluster() });
    nodes.push(started);
    return started;
  }

  it('reads the persistence of every master, and refuses the cluster as not durable', async () => {
    const client = cluster();
    try {
      await client.ping();
      const durability = await inspectDurability(client, false);
      expect(durability.durable).toBe(false);
      expect(durability.problems.filter((problem) => problem.includes('append-only file is off'))).toHaveLength(3);
    } finally {
      client.disconnect();
    }
  });

  it("computes a key's slot as the cluster does (replica waits find their masters without CLUSTER KEYSLOT): hash tags, empty and unclosed braces, non-ASCII keys", async () => {
    const client = cluster();
    try {
      const keys = ['', 'a', '123456789', 'ilk:{payment:pi_1}:state:e1', 'ilk:effect-partitions', '{}', '{}x', 'x{}y{z}', '{a}{b}', 'a{b', 'a}b{c}', '{{x}}', 'é{ü}', '€', 'caf\u00e9', 'ilk:{customer:cus_Ab9}:x'];
      for (let index = 0; index < 200; index++) keys.push(`k${index}:${'z'.repeat(index % 7)}{t${index % 13}}`);
      for (const key of keys) expect(keySlot(key), key).toBe(Number(await client.cluster('KEYSLOT', key)));
    } finally {
      client.disconnect();
    }
  });

  it('reads maxmemory-policy and no-appendfsync-on-rewrite on every master and names the master that breaks them', async () => {
    const [evicting, lax] = servers;
    const admins = [evicting, lax].map((server) => new Redis(server?.url ?? ''));
    const client = cluster();
    try {
      await admins[0]?.config('SET', 'maxmemory-policy', 'allkeys-lru');
      await admins[1]?.config('SET', 'no-appendfsync-on-rewrite', 'yes');
      await client.ping();
      const { problems } = await inspectDurability(client, false);
      expect(problems.filter((problem) => problem.includes('maxmemory-policy is allkeys-lru'))).toEqual([expect.stringContaining(`127.0.0.1:${evicting?.port ?? 0}: maxmemory-policy`)]);
      expect(problems.filter((problem) => problem.includes('no-appendfsync-on-rewrite is yes'))).toEqual([expect.stringContaining(`127.0.0.1:${lax?.port ?? 0}: no-appendfsync-on-rewrite`)]);
    } finally {
      await admins[0]?.config('SET', 'maxmemory-policy', 'noeviction');
      await admins[1]?.config('SET', 'no-appendfsync-on-rewrite', 'no');
      for (const admin of admins) admin.disconnect();
      client.disconnect();
    }
  });

  it('queues webhook events on the cluster: a batch is checked and added in the queue\'s slot, and a redelivery is a duplicate', async () => {
    const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: key.key });
    const facts = createFactsQueue(stores);
    try {
      // Connected first: before, a later batch's check may reach Redis ahead of an earlier batch's adds, and only
      // the duplicate count can be wrong (queues/facts.ts).
      await facts.queue.waitUntilReady();
      const events = Array.from({ length: 20 }, (_, i) => ({ id: `evt_cluster_${i}`, type: 'refund.updated', data: { object: { id: `re_cluster_${i}` } } }));
      const answers = await Promise.all([...events, ...events.slice(0, 1)].map((event) => facts.accept(event)));
      expect(answers.map((answer) => answer.duplicate)).toEqual([...events.map(() => false), true]);
      const [, again] = events;
      if (again) expect(await facts.accept(again)).toEqual({ duplicate: true });
      expect(await facts.queue.count()).toBe(events.length);
    } finally {
      await facts.close();
      await stores.close();
    }
  });

  it('commits, recovers after a crash and enforces a shared cap, with effects spread over the masters', async () => {
    const a = await node();
    const payments = Array.from({ length: 6 }, (_, i) => `pi_cluster_${i}`);
    const effectIds: string[] = [];
    for (const payment of payments) {
      const subject = `payment:${payment}`;
      target.world.set(subject, { chargebacks: [], refunded_by_others: 0 });
      const terms = approvalTerms({ scope: subject, capCents: 3_000 });
      await a.approvals.grant(terms);
      const first = await a.gate.submit(refundProposal({ approval: terms.id, paymentIntent: payment, amount: 2_000 }));
      expect(first.outcome).toBe('COMMITTED');
      const over = await a.gate.submit(refundProposal({ approval: terms.id, paymentIntent: payment, amount: 1_500 }));
      expect(over.outcome).toBe('REFUSED:over_cap');
      effectIds.push(first.effectId, over.effectId);
    }
    // A cluster binds in the binding's own slot before the dispatch step (one server does both in one script): a
    // request id bound to one payment is refused on another there too.
    const reused = await a.gate.submit(refundProposal({ requestId: 'case-cluster-bound', approval: 'ap_none', paymentIntent: payments[0] ?? '' }));
    expect(reused.outcome).toBe('REFUSED:lease');
    const elsewhere = await a.gate.submit(refundProposal({ requestId: 'case-cluster-bound', approval: 'ap_none', paymentIntent: payments[1] ?? '' }));
    expect(elsewhere).toMatchObject({ outcome: 'REFUSED:conflicting_payload', reason: expect.stringContaining(`bound to payment:${payments[0] ?? ''}`) });

    const subject = 'payment:pi_cluster_crash';
    target.world.set(subject, { chargebacks: [], refunded_by_others: 0 });
    const terms = approvalTerms({ scope: subject });
    await a.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id, paymentIntent: 'pi_cluster_crash' });
    target.inject({ kind: 'crash-after-send' });
    await expect(a.gate.submit(proposal)).rejects.toBeInstanceOf(ProcessCrash);
    await kill(a);
    const b = await node();
    const report = await b.gate.recover();
    expect(report.settled.map((item) => item.outcome)).toEqual(['COMMITTED_BY_RETRY']);
    const crashed = b.gate.effectIdOf(proposal);
    expect(target.landedCount(crashed)).toBe(1);

    for (const effectId of [...effectIds, crashed]) {
      const receipt = await b.journal.receipt(effectId);
      expect(verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: key.publicKeys }).valid).toBe(true);
    }
    const admin = cluster();
    await admin.ping();
    const perMaster = await Promise.all(admin.nodes('master').map((master) => master.dbsize()));
    await admin.quit();
    expect(perMaster.filter((size) => size > 0).length).toBeGreaterThanOrEqual(2);
  });
});
