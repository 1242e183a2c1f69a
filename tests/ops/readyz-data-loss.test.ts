// Rule: a process that found Redis lost its data (the deployment marker gone: a restart without the append-only file, a
// FLUSHALL, a failover to an empty server) refuses every write and send until it is restarted, so its probes say so too:
// /readyz answers 503 with a failed redis_durable check whose detail is the loss's own sentence (what happened, what to
// do), and the interlock_redis_durable gauge reads 0, on the api's and on a worker's metrics, opted out of durability or
// not, however the settings read now, and even when a later durability check fails.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { startService } from '../../src/main.js';
import { durabilityOf } from '../../src/interlock.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { storeChecks } from '../../webhooks/api/ops-routes.js';
import { createMetrics } from '../../webhooks/ops/metrics.js';
import { startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { freePort, startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { TEST_KEY } from '../stripe/stripe-support.js';

const DURABLE = ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--no-appendfsync-on-rewrite', 'no'];
const LOSS = 'Redis lost its data while this process ran';
const RESTART = 'sends nothing until it is restarted';

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

async function privateRedis(args: readonly string[] = DURABLE): Promise<{ redis: PrivateRedis; admin: Redis }> {
  const redis = await startPrivateRedis(args);
  closers.push(() => redis.stop());
  const admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  admin.on('error', () => undefined);
  closers.push(() => admin.quit());
  return { redis, admin };
}

function sample(text: string, name: string): number | undefined {
  const line = text.split('\n').find((item) => item.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** A worker (a sender on its own stores) on `url`, re-checking durability every 200 ms. */
async function worker(url: string, unsafeDurability: boolean): Promise<TestNode> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  const node = await startNode({ config: testConfig({ redisUrl: url, unsafeDurability, durabilityCheckMs: 200 }), target: createMemoryTarget({ tier: 2 }), key: testKey().key, redis: client });
  closers.push(() => node.close());
  return node;
}

async function durableCheck(node: TestNode): Promise<{ ok: boolean; detail?: string }> {
  const check = storeChecks(node.stores).find((item) => item.name === 'redis_durable');
  const answer = await check?.check();
  return typeof answer === 'object' ? answer : { ok: answer === true };
}

describe('probes after Redis lost its data', () => {
  it('the api: /readyz answers 503 naming the loss and what to do, and its metrics read durable 0', async () => {
    const { redis, admin } = await privateRedis();
    const dir = mkdtempSync(join(tmpdir(), 'readyz-data-loss-'));
    closers.push(async () => rmSync(dir, { recursive: true, force: true }));
    // Stripe does not answer here: an advisory check (degraded, 200), so only Redis decides readiness.
    const config = testConfig({ redisUrl: redis.url, unsafeDurability: false, durabilityCheckMs: 200, host: '127.0.0.1', port: 0, dataDir: dir, stripeSecretKey: TEST_KEY, stripeApiBase: `http://127.0.0.1:${await freePort()}`, apiTokens: 'sam:support:itk_support_dataloss0123456789', metricsAddr: { host: '127.0.0.1', port: await freePort() } });
    const service = await startService(config, ['api']);
    closers.push(() => service.close());
    const readyz = async () => {
      const answer = await fetch(`${service.url ?? ''}/readyz`);
      return { status: answer.status, body: (await answer.json()) as { status: string; checks: { name: string; ok: boolean; detail: string | null }[] } };
    };
    const durable = async () => sample(await (await fetch(service.metricsUrl ?? '')).text(), 'interlock_redis_durable');
    expect((await readyz()).status).toBe(200);
    expect(await durable()).toBe(1);

    await admin.flushall();
    await expect.poll(async () => (await readyz()).status, { timeout: 5_000, interval: 100 }).toBe(503);
    const { body } = await readyz();
    expect(body.status).toBe('unready');
    const check = body.checks.find((item) => item.name === 'redis_durable');
    expect(check?.ok).toBe(false);
    expect(check?.detail).toContain(LOSS);
    expect(check?.detail).toContain(RESTART);
    expect(await durable()).toBe(0);
    // The settings still read durable, and the marker a restart would write is not back: it stays so.
    expect((await admin.config('GET', 'appendfsync')) as string[]).toEqual(['appendfsync', 'always']);
    expect((await readyz()).status).toBe(503);
  });

  it("a worker: its durability reading and its metrics' gauge report the loss, as its sends are refused", async () => {
    const { redis, admin } = await privateRedis();
    const node = await worker(redis.url, false);
    const metrics = createMetrics({ stores: node.stores, defaultMetrics: false });
    expect(sample((await metrics.render()).text, 'interlock_redis_durable')).toBe(1);

    await admin.flushall();
    await node.durabilityMonitor.check();
    expect(() => node.durabilityMonitor.assertDurable()).toThrow(LOSS);
    expect(sample((await metrics.render()).text, 'interlock_redis_durable')).toBe(0);
    const reading = await durabilityOf(node.stores);
    expect(reading).toMatchObject({ durable: false, optedOut: false });
    expect(reading.problems[0]).toContain(LOSS);
  });

  it('opted out of durability, the loss still makes the process unready, and stays so when a later check fails', async () => {
    const { redis, admin } = await privateRedis(['--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction']);
    const node = await worker(redis.url, true);
    // Before the loss the opt-out is accepted: ready, with the settings named.
    expect(await durableCheck(node)).toMatchObject({ ok: true, detail: expect.stringContaining('opted out') });

    await admin.flushall();
    await node.durabilityMonitor.check();
    const lost = await durableCheck(node);
    expect(lost.ok).toBe(false);
    expect(lost.detail).toContain(LOSS);

    // Redis goes away: the next check fails, which says nothing of the data. The loss stands, and nothing is sent.
    await redis.stop();
    const failed = await node.durabilityMonitor.check();
    expect(failed.checkError).not.toBeNull();
    expect(() => node.durabilityMonitor.assertDurable()).toThrow(LOSS);
    const after = await durableCheck(node);
    expect(after.ok).toBe(false);
    expect(after.detail).toContain(LOSS);
  });
});
