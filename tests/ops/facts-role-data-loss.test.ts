// Rule: every process of a deployment holds the deployment marker, whatever its roles: a process run with the facts role
// only (serve --roles facts) reads it at start and at every durability check, and once Redis lost its data (the marker
// gone or changed) its /readyz answers 503 naming the loss, its interlock_redis_durable gauge reads 0, and its facts
// worker records nothing more (no OBSERVED entry, no alert) until it is restarted, as the api and the worker do
// (README "Redis"; tests/ops/readyz-data-loss.test.ts).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { startService } from '../../src/main.js';
import { startFactsRig } from '../facts/facts-rig.js';
import { testConfig } from '../support/harness.js';
import { freePort, startPrivateRedis } from '../support/private-redis.js';
import { TEST_KEY } from '../stripe/stripe-support.js';

const DURABLE = ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--no-appendfsync-on-rewrite', 'no'];
const LOSS = 'Redis lost its data while this process ran';

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

function sample(text: string, name: string): number | undefined {
  const line = text.split('\n').find((item) => item.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'facts-role-loss-'));
  closers.push(async () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The facts-only process's tokenless probes (INTERLOCK_METRICS_ADDR). */
function probes(metricsPort: number) {
  const base = `http://127.0.0.1:${metricsPort}`;
  return {
    readyz: async () => {
      const answer = await fetch(`${base}/readyz`);
      const body = (await answer.json()) as { checks?: { name: string; detail: string | null }[] };
      return { status: answer.status, durable: body.checks?.find((check) => check.name === 'redis_durable')?.detail ?? null };
    },
    gauge: async () => sample(await (await fetch(`${base}/metrics`)).text(), 'interlock_redis_durable'),
  };
}

describe('serve --roles facts after Redis lost its data', () => {
  it('its /readyz answers 503 naming the loss and its durability gauge reads 0, as the api does', async () => {
    const redis = await startPrivateRedis(DURABLE);
    closers.push(() => redis.stop());
    const admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    admin.on('error', () => undefined);
    closers.push(() => admin.quit());
    const metricsPort = await freePort();
    const config = testConfig({ keyPrefix: `frl${randomBytes(4).toString('hex')}`, redisUrl: redis.url, unsafeDurability: false, durabilityCheckMs: 200, host: '127.0.0.1', port: 0, dataDir: tempDir(), stripeSecretKey: TEST_KEY, stripeApiBase: `http://127.0.0.1:${await freePort()}`, metricsAddr: { host: '127.0.0.1', port: metricsPort } });
    const facts = await startService(config, ['facts']);
    closers.push(() => facts.close());
    const { readyz, gauge } = probes(metricsPort);
    await expect.poll(async () => (await readyz()).status, { timeout: 20_000, interval: 100 }).toBe(200);
    expect(await gauge()).toBe(1);
    // The facts-only process is the deployment's first here: it wrote the marker itself.
    expect(await admin.exists(`${config.keyPrefix}:{~index}:deployment`)).toBe(1);

    await admin.flushall();
    await expect.poll(async () => (await readyz()).status, { timeout: 20_000, interval: 100 }).toBe(503);
    expect((await readyz()).durable).toContain(LOSS);
    expect(await gauge()).toBe(0);
  }, 60_000);

  it('its facts worker records nothing of an event it takes after the loss: the job waits, refused, spending no attempt', async () => {
    // The route and the sender run in the rig; the facts worker only in the facts-only process.
    const rig = await startFactsRig({ factsWorker: false });
    closers.push(() => rig.close());
    const dir = tempDir();
    writeFileSync(join(dir, 'signing-key.pem'), rig.signingKeyPem, { mode: 0o600 });
    const metricsPort = await freePort();
    const facts = await startService({ ...rig.config, durabilityCheckMs: 200, signingKeyFile: join(dir, 'signing-key.pem'), dataDir: join(dir, 'data'), metricsAddr: { host: '127.0.0.1', port: metricsPort } }, ['facts']);
    closers.push(() => facts.close());
    const { effectId, refund } = await rig.committedRefund();
    const before = new Set((await rig.factsQueue.queue.getJobs(['completed', 'failed', 'delayed', 'waiting', 'active'])).map((job) => job.id));

    // The marker is replaced, as a process started after a loss writes its own; the journal stays, so a fact recorded
    // now would have an effect to go on, and nothing but the marker tells this process that Redis is not its own.
    const { readyz, gauge } = probes(metricsPort);
    expect((await readyz()).status).toBe(200);
    await rig.redis.set(rig.stores.keys.deployment, 'another-deployment-marker');
    await expect.poll(async () => (await readyz()).status, { timeout: 20_000, interval: 100 }).toBe(503);
    expect(await gauge()).toBe(0);

    // The refund fails at Stripe: its events are queued (the rig's route) and taken by the facts-only process.
    await rig.sandbox.control.request('POST', `/refunds/${refund.id}/fail`, { failure_reason: 'lost_or_stolen_card' });
    await rig.sandbox.control.idle();
    const taken = async () => {
      const jobs = (await rig.factsQueue.queue.getJobs(['completed', 'failed', 'delayed', 'waiting', 'active'])).filter((job) => !before.has(job.id));
      const completed = (await rig.factsQueue.queue.getJobs(['completed'])).filter((job) => !before.has(job.id));
      // Refused: each was taken and put back to wait (delayed) for Redis, spending no attempt (the refusal is Redis's,
      // not the event's: tests/facts/durability-refusal-waits.test.ts), and none failed.
      const delayed = new Set((await rig.factsQueue.queue.getJobs(['delayed'])).map((job) => job.id));
      return { queued: jobs.length > 0, refused: jobs.every((job) => delayed.has(job.id) && job.attemptsMade === 0 && job.failedReason === undefined), completed: completed.length };
    };
    await expect.poll(taken, { timeout: 30_000, interval: 100 }).toEqual({ queued: true, refused: true, completed: 0 });
    expect((await rig.observed(effectId)).filter((entry) => entry.status === 'failed')).toEqual([]);
    expect((await rig.stores.alerts.list()).filter((alert) => alert.effectId === effectId)).toEqual([]);
  }, 90_000);
});
