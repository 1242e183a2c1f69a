// Rule: a process without the api role (a worker) can be probed for readiness on its INTERLOCK_METRICS_ADDR listener,
// the only address it has: GET /healthz answers that the process is up, GET /readyz runs the worker's own checks
// (Redis and its durability, its heartbeat, its effects and facts workers taking jobs, Stripe advisory) and answers
// 200 while they pass and 503 `unready` naming the failed ones otherwise: while Redis hangs, and while another
// process beats under its worker id (it sends nothing then). Without this an orchestrator (compose's healthcheck)
// keeps a worker that cannot send in rotation.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { metricsApp } from '../../webhooks/ops/metrics.js';
import { workerChecks } from '../../webhooks/api/ops-routes.js';
import { freePort, startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const ROOT = join(import.meta.dirname, '..', '..');

type Readiness = { status: string; checks: { name: string; ok: boolean; detail: string | null; advisory?: true }[] };

async function readyz(url: string): Promise<{ status: number; body: Readiness } | null> {
  const answer = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) }).catch(() => null);
  return answer === null ? null : { status: answer.status, body: (await answer.json()) as Readiness };
}

async function until<T>(what: string, ask: () => Promise<T | null>, logs: string[], withinMs = 30_000): Promise<T> {
  const giveUp = Date.now() + withinMs;
  for (;;) {
    const got = await ask();
    if (got !== null) return got;
    if (Date.now() > giveUp) throw new Error(`${what} within ${withinMs} ms:\n${logs.join('')}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe("a worker's /readyz on its metrics listener", () => {
  const children: ChildProcess[] = [];
  const workers: string[] = [];
  const logs: string[] = [];
  let dir: string;
  let redis: PrivateRedis;
  let sandbox: Sandbox;
  let env: Record<string, string>;

  async function startWorker(extra: Record<string, string> = {}): Promise<string> {
    const port = await freePort();
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'interlock.js'), 'serve', '--roles', 'worker,facts'], { cwd: dir, env: { ...env, INTERLOCK_METRICS_ADDR: `127.0.0.1:${port}`, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (chunk: Buffer) => logs.push(chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => logs.push(chunk.toString()));
    children.push(child);
    workers.push(`http://127.0.0.1:${port}`);
    return `http://127.0.0.1:${port}`;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'interlock-worker-readyz-'));
    redis = await startPrivateRedis(['--save', '', '--appendonly', 'no']);
    sandbox = await startSandbox({ port: 0, delays: 'fast' });
    env = {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      REDIS_URL: redis.url,
      INTERLOCK_UNSAFE_DURABILITY: '1',
      INTERLOCK_DATA_DIR: dir,
      INTERLOCK_LOG_LEVEL: 'warn',
      INTERLOCK_WORKER_ID: 'readyz-worker',
      INTERLOCK_REDIS_COMMAND_TIMEOUT_MS: '500',
      STRIPE_SECRET_KEY: 'sk_test_workerReadyz01',
      STRIPE_API_BASE: sandbox.url,
    };
  }, 60_000);

  afterAll(async () => {
    redis?.process.kill('SIGCONT');
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await Promise.all(children.map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((resolve) => child.once('exit', resolve)) : null)));
    await sandbox?.close();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers ready with its own checks, then unready naming Redis and the heartbeat while Redis hangs, then ready again', async () => {
    const worker = await startWorker();
    const first = await until('the worker ready', async () => {
      const answer = await readyz(worker);
      return answer?.status === 200 ? answer : null;
    }, logs, 60_000);
    expect(first.body.status).toBe('ready');
    expect(first.body.checks.map((check) => check.name).sort()).toEqual(['decisions_worker', 'effects_worker', 'facts_worker', 'heartbeat', 'recovery_worker', 'redis', 'redis_durable', 'redis_writable', 'stripe']);
    const health = await fetch(`${worker}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });

    redis.process.kill('SIGSTOP');
    try {
      const down = await until('the worker unready while Redis hangs', async () => {
        const answer = await readyz(worker);
        return answer?.status === 503 && answer.body.checks.some((check) => check.name === 'heartbeat' && !check.ok) ? answer : null;
      }, logs);
      expect(down.body.status).toBe('unready');
      const failed = down.body.checks.filter((check) => !check.ok).map((check) => check.name);
      expect(failed).toContain('redis');
      expect(down.body.checks.find((check) => check.name === 'heartbeat')?.detail).toMatch(/readyz-worker has not renewed its heartbeat/);
    } finally {
      redis.process.kill('SIGCONT');
    }
    await until('the worker ready again once Redis answers', async () => ((await readyz(worker))?.status === 200 ? true : null), logs);
  }, 120_000);

  it('answers unready while another process beats under its worker id, and ready once it has gone', async () => {
    // The first test's worker holds readyz-worker; a second process started under the same id takes it over.
    const first = workers[0] ?? '';
    const second = await startWorker();
    await until('the second worker ready', async () => ((await readyz(second))?.status === 200 ? true : null), logs, 60_000);
    const superseded = await until('the first worker unready', async () => {
      const answer = await readyz(first);
      return answer?.status === 503 ? answer : null;
    }, logs);
    expect(superseded.body.checks.filter((check) => !check.ok)).toEqual([{ name: 'heartbeat', ok: false, detail: expect.stringMatching(/another process beats under worker id readyz-worker, so this one sends nothing/) }]);
    children[1]?.kill('SIGKILL');
    await until('the first worker ready again once the other has gone', async () => ((await readyz(first))?.status === 200 ? true : null), logs);
  }, 90_000);
});

/** A queue worker as the checks see it: running or not, its own connection answering. */
function probed(running: boolean, ping: () => Promise<unknown> = async () => 'PONG') {
  return { isRunning: () => running, backend: { client: Promise.resolve({ ping }) } };
}

describe('the metrics listener before the roles start, and the worker checks on their own', () => {
  it('answers 503 starting until the checks are set, and /healthz at once', async () => {
    let checks: ReturnType<typeof workerChecks> | null = null;
    const app = metricsApp({ render: async () => ({ contentType: 'text/plain', text: '' }) }, { error: () => undefined } as never, { checks: () => checks });
    const starting = await request(app).get('/readyz');
    expect(starting.status).toBe(503);
    expect(starting.body).toEqual({ status: 'unready', checks: [{ name: 'starting', ok: false, detail: 'the service is starting its roles' }] });
    expect((await request(app).get('/healthz')).status).toBe(200);
    checks = workerChecks({ heartbeat: null, workers: [{ name: 'effects', worker: probed(true) }] });
    expect((await request(app).get('/readyz')).body).toEqual({ status: 'ready', checks: [{ name: 'effects_worker', ok: true, detail: null }] });
  });

  it('fails a superseded or lapsed heartbeat and a worker that takes no jobs', async () => {
    const heartbeat = { workerId: 'w1', ttlMs: 4_000, alive: 1_000, by: null as string | null, aliveFor() { return this.alive; }, supersededBy() { return this.by; } };
    const app = metricsApp({ render: async () => ({ contentType: 'text/plain', text: '' }) }, { error: () => undefined } as never, { checks: () => workerChecks({ heartbeat, workers: [{ name: 'effects', worker: probed(true) }, { name: 'facts', worker: probed(false) }] }) });
    let answer = await request(app).get('/readyz');
    expect(answer.status).toBe(503);
    expect(answer.headers['retry-after']).toBe('5');
    expect(answer.body.checks).toEqual([
      { name: 'heartbeat', ok: true, detail: null },
      { name: 'effects_worker', ok: true, detail: null },
      { name: 'facts_worker', ok: false, detail: expect.stringMatching(/facts worker is not taking jobs/) },
    ]);
    const unanswered = metricsApp({ render: async () => ({ contentType: 'text/plain', text: '' }) }, { error: () => undefined } as never, { checks: () => workerChecks({ heartbeat: null, workers: [{ name: 'decisions', worker: probed(true, async () => { throw new Error('Connection is closed.'); }) }] }) });
    expect((await request(unanswered).get('/readyz')).body.checks).toEqual([{ name: 'decisions_worker', ok: false, detail: "the decisions worker's own Redis connection does not answer (Connection is closed.), so it takes no jobs" }]);
    heartbeat.alive = 0;
    answer = await request(app).get('/readyz');
    expect(answer.body.checks[0]).toEqual({ name: 'heartbeat', ok: false, detail: expect.stringMatching(/w1 has not renewed its heartbeat within 4000 ms/) });
    heartbeat.alive = 1_000;
    heartbeat.by = 'abc';
    answer = await request(app).get('/readyz');
    expect(answer.body.checks[0]).toEqual({ name: 'heartbeat', ok: false, detail: expect.stringMatching(/another process beats under worker id w1/) });
  });
});
