// A failover to an asynchronously replicated replica can lose an acknowledged DISPATCHED (the README's limits).
// With INTERLOCK_REDIS_MIN_REPLICAS the gate sends only once that many replicas hold it (Redis WAIT): a replica
// that is behind or gone holds the send back, and recovery sends the effect, once, when it has caught up.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
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
});
