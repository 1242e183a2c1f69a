// Rule: /readyz answers 503 `unready` while Redis turns every write away, naming the failed `redis_writable` check
// and what to do: Redis still answers PING and reads then (full memory under noeviction answers OOM, a replica READONLY,
// a failed save MISCONF), while every POST answers 503 redis_unavailable and nothing is recorded, so a probe that only
// pinged kept a process in rotation that could take nothing in. Both probes of a process say so: the api's and its
// metrics listener's (a worker's). Once Redis takes writes again, the process is ready again.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { openStores } from '../../src/interlock.js';
import { startService } from '../../src/main.js';
import { storeChecks } from '../../webhooks/api/ops-routes.js';
import { testConfig } from '../support/harness.js';
import { freePort, startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { TEST_KEY } from '../stripe/stripe-support.js';

const DURABLE = ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--no-appendfsync-on-rewrite', 'no'];
const APPROVER = 'itk_approver_readyzwrites0123456789';

type Check = { name: string; ok: boolean; detail: string | null };
type Readiness = { status: number; body: { status: string; checks: Check[] } };

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

async function privateRedis(): Promise<{ redis: PrivateRedis; admin: Redis }> {
  const redis = await startPrivateRedis(DURABLE);
  closers.push(() => redis.stop());
  const admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  admin.on('error', () => undefined);
  closers.push(() => admin.quit());
  return { redis, admin };
}

async function readyz(url: string): Promise<Readiness> {
  const answer = await fetch(url);
  return { status: answer.status, body: (await answer.json()) as Readiness['body'] };
}

const named = (answer: Readiness, name: string) => answer.body.checks.find((check) => check.name === name);

describe('readiness while Redis turns writes away', () => {
  it('full memory (OOM): the api and its metrics listener answer 503 naming redis_writable and what to do, then ready again', async () => {
    const { redis, admin } = await privateRedis();
    const dir = mkdtempSync(join(tmpdir(), 'readyz-redis-writes-'));
    closers.push(async () => rmSync(dir, { recursive: true, force: true }));
    // Stripe does not answer here: an advisory check (degraded, 200), so only Redis decides readiness.
    const config = testConfig({ redisUrl: redis.url, unsafeDurability: false, host: '127.0.0.1', port: 0, dataDir: dir, stripeSecretKey: TEST_KEY, stripeApiBase: `http://127.0.0.1:${await freePort()}`, apiTokens: `ana:approver:${APPROVER}`, metricsAddr: { host: '127.0.0.1', port: await freePort() } });
    const service = await startService(config, ['api']);
    closers.push(() => service.close());
    const probes = [`${service.url ?? ''}/readyz`, (service.metricsUrl ?? '').replace(/\/metrics$/, '/readyz')];
    for (const probe of probes) expect((await readyz(probe)).status, probe).toBe(200);

    // The limit below what Redis holds: used_memory past maxmemory, as when the data reach it.
    await admin.config('SET', 'maxmemory', '1');
    const grant = await fetch(`${service.url ?? ''}/v1/approvals`, { method: 'POST', headers: { authorization: `Bearer ${APPROVER}`, 'content-type': 'application/json' }, body: JSON.stringify({ id: 'ap_readyz_full', approver: 'a@example.com', cap_cents: 100, scope: 'payment:pi_readyz' }) });
    expect(grant.status).toBe(503);
    expect(((await grant.json()) as { error: { code: string } }).error.code).toBe('redis_unavailable');
    for (const probe of probes) {
      const answer = await readyz(probe);
      expect(answer.status, probe).toBe(503);
      expect(answer.body.status, probe).toBe('unready');
      // Redis answers: only the write says it can take nothing in.
      expect(named(answer, 'redis'), probe).toMatchObject({ ok: true });
      const writable = named(answer, 'redis_writable');
      expect(writable?.ok, probe).toBe(false);
      expect(writable?.detail, probe).toContain('OOM');
      expect(writable?.detail, probe).toContain('raise maxmemory or free memory');
      expect(writable?.detail, probe).toContain('README "Retention"');
    }

    await admin.config('SET', 'maxmemory', '0');
    for (const probe of probes) {
      const answer = await readyz(probe);
      expect(answer.status, probe).toBe(200);
      expect(named(answer, 'redis_writable'), probe).toMatchObject({ ok: true });
    }
  });

  it('a read-only replica (READONLY): the check fails, saying to point REDIS_URL at the master', async () => {
    const { redis, admin } = await privateRedis();
    const stores = await openStores(testConfig({ redisUrl: redis.url }));
    closers.push(() => stores.close());
    const writable = storeChecks(stores).find((check) => check.name === 'redis_writable');
    expect(await writable?.check()).toEqual({ ok: true });

    // A replica of a master that is not there: it answers reads and refuses every write.
    await admin.call('REPLICAOF', '127.0.0.1', String(await freePort()));
    const refused = await writable?.check();
    expect(refused).toMatchObject({ ok: false, detail: expect.stringContaining('READONLY') });
    expect(refused).toMatchObject({ detail: expect.stringContaining('point it at the master') });
    expect(await stores.ping()).toBe(true);

    await admin.call('REPLICAOF', 'NO', 'ONE');
    expect(await writable?.check()).toEqual({ ok: true });
  });
});
