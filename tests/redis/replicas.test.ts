// A failover to an asynchronously replicated replica can lose an acknowledged DISPATCHED (the README's limits).
// With INTERLOCK_REDIS_MIN_REPLICAS the gate sends only once that many replicas hold it (Redis WAIT): a replica
// that is behind or gone holds the send back, and recovery sends the effect, once, when it has caught up.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { createRedisClient } from '../../src/redis/client.js';
import { approvalTerms, kill, refundProposal, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const DURABLE = ['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--save', ''];

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const giveUp = Date.now() + 15_000;
  while (!(await check())) {
    if (Date.now() > giveUp) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('sending only what replicas hold (INTERLOCK_REDIS_MIN_REPLICAS)', () => {
  let primary: PrivateRedis;
  let replica: PrivateRedis;
  const nodes: TestNode[] = [];
  beforeAll(async () => {
    // No delay before the first full sync, so the replica is online in a moment.
    primary = await startPrivateRedis([...DURABLE, '--repl-diskless-sync-delay', '0']);
    replica = await startPrivateRedis([...DURABLE, '--replicaof', '127.0.0.1', String(primary.port)]);
    const admin = new Redis(primary.url);
    await until(async () => /slave0:.*state=online/.test(await admin.info('replication')), 'the replica to be online');
    await admin.quit();
  }, 60_000);
  afterAll(async () => {
    for (const node of nodes) await node.close().catch(() => undefined);
    await replica.stop();
    await primary.stop();
  });

  it('holds a send back while the replica cannot acknowledge the DISPATCHED, and sends it once when it can', async () => {
    // WAIT's timeout leaves room for an fsync-always replica on a loaded machine: the sends that must go out wait for
    // the replica's acknowledgement, and only the stopped replica is expected to miss it.
    const config = testConfig({ redisUrl: primary.url, unsafeDurability: false, redisMinReplicas: 1, redisWaitMs: 2_000 });
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
    target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
    const key = testKey();
    const a = await startNode({ config, target, key: key.key });
    nodes.push(a);
    const terms = approvalTerms({ maxUses: 5 });
    await a.approvals.grant(terms);

    expect((await a.gate.submit(refundProposal({ approval: terms.id }))).outcome).toBe('COMMITTED');

    // The replica stops answering (a partition, a stalled host): WAIT times out, and nothing is sent.
    replica.process.kill('SIGSTOP');
    const held = await a.gate.submit(refundProposal({ requestId: 'case-held', approval: terms.id }));
    expect(held).toMatchObject({ outcome: 'IN_FLIGHT', reason: expect.stringContaining('replicas required acknowledged') });
    expect(target.landedCount(held.effectId)).toBe(0);
    expect((await a.gate.recover({ only: [held.effectId] })).unresolved).toEqual([expect.objectContaining({ outcome: 'UNRESOLVED:replicas_behind' })]);
    expect(target.landedCount(held.effectId)).toBe(0);

    replica.process.kill('SIGCONT');
    await kill(a);
    const b = await startNode({ config, target, key: key.key });
    nodes.push(b);
    expect((await b.gate.recover({ only: [held.effectId] })).settled).toEqual([expect.objectContaining({ effectId: held.effectId, outcome: 'COMMITTED_BY_RETRY' })]);
    expect(target.landedCount(held.effectId)).toBe(1);
  }, 60_000);

  // Rule (redis/replica-wait.ts): Redis WAIT blocks the connection it is sent on. Sent on the process's one connection,
  // several sends held back at once queued one WAIT timeout each behind another (past the command timeout from the
  // fifth on) and every other command of the process waited behind them; on a connection of their own, one round at a
  // time shared by every send that asked before it, each is held back within about two WAITs, and the rest go on.
  it('holds several sends back at once within two WAITs, without holding up the process\'s other commands', async () => {
    const config = testConfig({ redisUrl: primary.url, unsafeDurability: false, redisMinReplicas: 1, redisWaitMs: 1_000, redisCommandTimeoutMs: 5_000, heartbeatMs: 1_000, heartbeatTtlMs: 4_000 });
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
    const node = await startNode({ config, target, key: testKey().key, redis: createRedisClient(config) });
    nodes.push(node);
    const proposals = [];
    for (const pi of ['pi_w0', 'pi_w1', 'pi_w2', 'pi_w3', 'pi_w4', 'pi_w5', 'pi_known']) {
      target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
      const terms = approvalTerms({ maxUses: 5, scope: `payment:${pi}` });
      await node.approvals.grant(terms);
      proposals.push(refundProposal({ approval: terms.id, paymentIntent: pi }));
    }
    const known = await node.gate.submit(proposals.pop() ?? refundProposal({ approval: '' }));
    expect(known.outcome).toBe('COMMITTED');

    replica.process.kill('SIGSTOP');
    const started = performance.now();
    const held = Promise.all(proposals.map(async (proposal) => ({ outcome: await node.gate.submit(proposal).then((answer) => answer.outcome, (error: Error) => `threw ${error.message}`), ms: performance.now() - started })));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const readAt = performance.now();
    const receipt = await node.journal.receipt(known.effectId).then((found) => found !== null, (error: Error) => `threw ${error.message}`);
    const readMs = performance.now() - readAt;
    const answers = await held;
    replica.process.kill('SIGCONT');
    const slowest = Math.max(...answers.map((answer) => answer.ms));
    expect({ outcomes: [...new Set(answers.map((answer) => answer.outcome))], heldBackWithinTwoWaits: slowest < 2_500, readNotBehindWaits: readMs < 900, receipt }, JSON.stringify({ slowest, readMs })).toEqual({ outcomes: ['IN_FLIGHT'], heldBackWithinTwoWaits: true, readNotBehindWaits: true, receipt: true });
  }, 120_000);

  // Rule: what a closed Interlock opened, it closed: the connections made for WAIT close with its stores, whoever owns
  // the Redis client it was given.
  it('closes the connections it opened for WAIT when it closes, on a client it was handed', async () => {
    const config = testConfig({ redisUrl: primary.url, unsafeDurability: false, redisMinReplicas: 1, redisWaitMs: 5_000 });
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
    const client = createRedisClient(config);
    const admin = new Redis(primary.url);
    const waitConnections = async () => String(await admin.client('LIST')).split('\n').filter((line) => / cmd=wait /.test(line)).length;
    try {
      // The earlier cases' nodes are still open, each with its own.
      const before = await waitConnections();
      const node = await startNode({ config, target, key: testKey().key, redis: client });
      target.world.set('payment:pi_close', { chargebacks: [], refunded_by_others: 0 });
      const terms = approvalTerms({ maxUses: 5, scope: 'payment:pi_close' });
      await node.approvals.grant(terms);
      expect((await node.gate.submit(refundProposal({ approval: terms.id, paymentIntent: 'pi_close' }))).outcome).toBe('COMMITTED');
      expect(await waitConnections()).toBe(before + 1);
      await node.close();
      await until(async () => (await waitConnections()) === before, 'the WAIT connection to close');
    } finally {
      await client.quit().catch(() => undefined);
      await admin.quit();
    }
  }, 60_000);
});
