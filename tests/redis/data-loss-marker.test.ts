// Rule: Redis that loses its data under a running worker (a restart without its append-only file, a FLUSHALL) must
// stop that worker sending: every setting the durability check reads stays right, but the journal is gone, so a
// request sent before the loss reads as new and, on a target that cannot dedupe by key, lands a second time. The
// deployment's marker key (keys.ts `deployment`) is read at every durability check; gone or changed, the worker sends
// nothing until it is restarted, even with INTERLOCK_UNSAFE_DURABILITY (it accepts settings that may lose data, not a
// loss that happened). Processes of one deployment share the marker, so a second one is no alarm.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedisApprovals } from '../../src/redis/approvals.js';
import { createKeys } from '../../src/redis/keys.js';
import { createMemoryTarget, type MemoryTarget } from '../../src/targets/memory-target.js';
import { approvalTerms, refundProposal, sleep, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const SAFE = ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--no-appendfsync-on-rewrite', 'no'];
const INTERVAL = 200;
// The monitor needs about two intervals; slack for a loaded machine.
const NOTICE_MS = 2 * INTERVAL + 3_000;

const servers: PrivateRedis[] = [];
const closers: (() => Promise<unknown>)[] = [];

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await Promise.all(servers.map((redis) => redis.stop()));
});

async function until(condition: () => boolean, what: string): Promise<void> {
  const giveUp = Date.now() + NOTICE_MS;
  while (!condition()) {
    if (Date.now() > giveUp) throw new Error(`${what} did not happen within ${NOTICE_MS} ms`);
    await sleep(20);
  }
}

/**
 * A durable private Redis (or, `optOut`, a test machine's: no append-only file, the durability check opted out of), an
 * admin connection to it, and a tier-2 target (looked up, never deduped by key).
 */
async function setting(options: { optOut?: boolean } = {}): Promise<{ redis: PrivateRedis; admin: Redis; target: MemoryTarget; node(): Promise<TestNode>; key: ReturnType<typeof testKey> }> {
  const optOut = options.optOut === true;
  const redis = await startPrivateRedis(optOut ? ['--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'] : SAFE);
  servers.push(redis);
  const admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  admin.on('error', () => undefined);
  closers.push(() => admin.quit());
  const target = createMemoryTarget({ tier: 2 });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const config = testConfig({ redisUrl: redis.url, unsafeDurability: optOut, durabilityCheckMs: INTERVAL });
  const key = testKey();
  return {
    redis,
    admin,
    target,
    key,
    async node() {
      const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
      client.on('error', () => undefined);
      const made = await startNode({ config, target, key: key.key, redis: client });
      closers.push(() => made.close());
      return made;
    },
  };
}

describe('the deployment marker', () => {
  it('a FLUSHALL under a running worker stops it sending: the same request is not sent a second time', async () => {
    const { admin, target, node } = await setting();
    const worker = await node();
    const terms = approvalTerms();
    await worker.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    expect((await worker.gate.submit(proposal)).outcome).toBe('COMMITTED');
    expect(target.landings).toHaveLength(1);

    await admin.flushall();
    // Someone puts the approval back from their own records; the journal of the committed refund is gone for good.
    await createRedisApprovals({ redis: admin, keys: createKeys(worker.config.keyPrefix) }).grant(terms);
    await until(() => !worker.durabilityMonitor.current().durable, 'the worker noticing the lost data');
    expect(worker.durabilityMonitor.current().problems[0]).toContain('Redis lost its data while this process ran');
    expect(() => worker.durabilityMonitor.assertDurable()).toThrow('deployment marker');

    // Refused before anything is sent, with what to do: not "retry once Redis is durable" (its settings are).
    const refused = await worker.gate.submit(proposal).then(
      () => null,
      (error: unknown) => error as Error,
    );
    expect(refused?.message).toContain('sends nothing until it is restarted');
    expect(refused?.message).not.toContain('once a check finds Redis durable');
    expect(target.landings).toHaveLength(1);
  });

  it('a restart of Redis without its append-only file is caught the same way, and stays caught after another process writes a new marker', async () => {
    const { redis, target, node } = await setting();
    const worker = await node();
    const terms = approvalTerms();
    await worker.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    expect((await worker.gate.submit(proposal)).outcome).toBe('COMMITTED');

    await redis.kill('SIGKILL');
    rmSync(join(redis.dir, 'appendonlydir'), { recursive: true, force: true });
    await redis.restart();
    await until(() => worker.durabilityMonitor.current().problems.some((problem) => problem.includes('marker')), 'the worker noticing the lost data');

    // A process started now finds no marker and writes one: it cannot tell, and sends; the one that ran before the
    // loss keeps refusing, whatever the marker says now.
    const later = await node();
    expect(later.durabilityMonitor.current().durable).toBe(true);
    await sleep(3 * INTERVAL);
    expect(worker.durabilityMonitor.current().durable).toBe(false);
    expect(worker.durabilityMonitor.current().problems[0]).toContain('Redis lost its data while this process ran');
    await later.approvals.grant(terms);
    await expect(worker.gate.submit(proposal)).rejects.toThrow('deployment marker');
    expect(target.landings).toHaveLength(1);
  });

  it('a marker that holds another id (Redis emptied, and another process wrote one before this one checked) is a loss too', async () => {
    const { admin, node } = await setting();
    const worker = await node();
    const { deployment } = worker.stores.keys;
    await admin.set(deployment, 'written-by-a-process-that-found-none');
    await until(() => !worker.durabilityMonitor.current().durable, 'the worker noticing the changed marker');
    expect(worker.durabilityMonitor.current().problems[0]).toContain('holds another id');
  });

  it('two processes of one deployment share the marker: neither reads the other as a loss', async () => {
    const { node } = await setting();
    const first = await node();
    const second = await node();
    await sleep(4 * INTERVAL);
    for (const worker of [first, second]) {
      await worker.durabilityMonitor.check();
      expect(worker.durabilityMonitor.current()).toMatchObject({ durable: true, problems: [] });
    }
  });

  it('with the durability opt-out, a FLUSHALL seen by the marker stops the process sending all the same: the request is not sent a second time', async () => {
    const { admin, target, node } = await setting({ optOut: true });
    const worker = await node();
    const terms = approvalTerms();
    await worker.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    expect((await worker.gate.submit(proposal)).outcome).toBe('COMMITTED');
    await admin.flushall();
    await createRedisApprovals({ redis: admin, keys: createKeys(worker.config.keyPrefix) }).grant(terms);
    await until(() => worker.durabilityMonitor.current().dataLost === true, 'the worker noticing the lost data');
    expect(worker.durabilityMonitor.current().problems[0]).toContain('sends nothing until it is restarted');
    await expect(worker.gate.submit(proposal)).rejects.toThrow('deployment marker');
    expect(target.landings).toHaveLength(1);
  });
});
