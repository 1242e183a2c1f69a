// Rule: a worker's /readyz (INTERLOCK_METRICS_ADDR) answers 200 only while its effects and facts workers can take jobs
// (README "Probes": "its `effects_worker` and `facts_worker` take jobs"); the jobs reach them through their own queue
// connections, not the stores' connection, so a worker whose queue connections are gone and cannot come back (Redis at
// maxclients after a blip, a proxy dropping them) must answer 503, as the api's /readyz does through its `queues` check.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { startService, type Service } from '../../src/main.js';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { testConfig } from '../support/harness.js';
import { freePort, startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

type Readiness = { status: string; checks: { name: string; ok: boolean; detail: string | null }[] };

let redis: PrivateRedis | undefined;
let sandbox: Sandbox | undefined;
let service: Service | undefined;
let admin: Redis | undefined;
let dir: string | undefined;

afterAll(async () => {
  await admin?.config('SET', 'maxclients', '10000').catch(() => undefined);
  await service?.close().catch(() => undefined);
  await sandbox?.close().catch(() => undefined);
  admin?.disconnect();
  await redis?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it("answers 503 while the worker's queue connections are down, not 200 `ready` with effects_worker ok", async () => {
  redis = await startPrivateRedis(['--save', '', '--appendonly', 'no']);
  sandbox = await startSandbox({ port: 0, delays: 'fast' });
  dir = mkdtempSync(join(tmpdir(), 'readiness-queue-conn-'));
  const config = testConfig({ redisUrl: redis.url, dataDir: dir, stripeSecretKey: 'sk_test_readinessQueueConn01', stripeApiBase: sandbox.url, metricsAddr: { host: '127.0.0.1', port: await freePort() }, heartbeatMs: 1_000, heartbeatTtlMs: 4_000 });
  service = await startService(config, ['worker', 'facts']);
  const base = (service.metricsUrl ?? '').replace(/\/metrics$/, '');
  const readyz = async (): Promise<{ status: number; body: Readiness }> => {
    const answer = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(5_000) });
    return { status: answer.status, body: (await answer.json()) as Readiness };
  };
  await expect.poll(async () => (await readyz()).status, { timeout: 20_000, interval: 200 }).toBe(200);

  admin = new Redis(redis.url);
  const adminId = String(await admin.client('ID'));
  // A probe now leaves the stores' own connection (the one /readyz, the heartbeat and the gate use) as the last to have
  // run CONFIG GET: every other connection of the worker is a queue connection (BullMQ's).
  await readyz();
  const clients = String(await admin.client('LIST')).split('\n').filter((line) => line.trim() !== '');
  const storesConnection = clients.filter((line) => !line.startsWith(`id=${adminId} `) && line.includes('cmd=config|get'));
  expect(storesConnection).toHaveLength(1);
  // No new connection is accepted (as at maxclients), and the queue connections are dropped.
  await admin.config('SET', 'maxclients', '1');
  for (const line of clients) {
    const id = /^id=(\d+)/.exec(line)?.[1] ?? '';
    if (id === adminId || line === storesConnection[0]) continue;
    await admin.client('KILL', 'ID', id);
  }
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  // The effects and facts workers have no connection to Redis left: they cannot take a job.
  const now = String(await admin.client('LIST'));
  const effectsName = `:${Buffer.from('effects').toString('base64')}:w:`;
  const factsName = `:${Buffer.from('facts').toString('base64')}`;
  expect(now).not.toContain(effectsName);
  expect(now).not.toContain(factsName);
  expect(now.split('\n').filter((line) => line.trim() !== '')).toHaveLength(2);

  const answer = await readyz();
  // Before the fix: 200 `ready`, every check ok (redis and the heartbeat ride the stores' connection; effects_worker and
  // facts_worker only ask BullMQ whether its loop runs, which it does, retrying a connection Redis refuses).
  expect({ status: answer.status, failed: answer.body.checks.filter((check) => !check.ok).map((check) => check.name) }).toEqual({
    status: 503,
    failed: expect.arrayContaining([expect.stringMatching(/effects_worker|queues/)]),
  });
}, 60_000);
