// Rule: /readyz answers for the whole process it is asked of. A process that runs the worker role beside the api role
// (`serve` with its default roles: `npm start`, and the Dockerfile's CMD ["serve"]) answers its API port's /readyz 503
// `unready`, naming `heartbeat`, while its own sender sends nothing (another process beats under its worker id, or its
// heartbeat lapsed), as its metrics listener does: a container running the image's command has only the API port to
// probe, and an orchestrator that hears 200 there keeps in rotation a process that cannot send.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { freePort, startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const ROOT = join(import.meta.dirname, '..', '..');
type Readiness = { status: string; checks: { name: string; ok: boolean; detail: string | null }[] };

const children: ChildProcess[] = [];
const logs: string[] = [];
let dir: string;
let redis: PrivateRedis;
let sandbox: Sandbox;
let env: Record<string, string>;

async function readyz(url: string): Promise<{ status: number; body: Readiness } | null> {
  const answer = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) }).catch(() => null);
  return answer === null ? null : { status: answer.status, body: (await answer.json()) as Readiness };
}

async function until<T>(what: string, ask: () => Promise<T | null>, withinMs = 45_000): Promise<T> {
  const giveUp = Date.now() + withinMs;
  for (;;) {
    const got = await ask();
    if (got !== null) return got;
    if (Date.now() > giveUp) throw new Error(`${what} within ${withinMs} ms:\n${logs.join('').slice(-3000)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function serve(args: string[], extra: Record<string, string>): void {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'interlock.js'), 'serve', ...args], { cwd: dir, env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (chunk: Buffer) => logs.push(chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => logs.push(chunk.toString()));
  children.push(child);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'readyz-combined-'));
  redis = await startPrivateRedis(['--save', '', '--appendonly', 'no']);
  sandbox = await startSandbox({ port: 0, delays: 'fast' });
  env = {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    REDIS_URL: redis.url,
    INTERLOCK_UNSAFE_DURABILITY: '1',
    INTERLOCK_DATA_DIR: dir,
    INTERLOCK_KEY_PREFIX: `rzc${randomBytes(4).toString('hex')}`,
    INTERLOCK_LOG_LEVEL: 'warn',
    INTERLOCK_WORKER_ID: 'readyz-combined',
    STRIPE_SECRET_KEY: 'sk_test_readyzCombined01',
    STRIPE_API_BASE: sandbox.url,
    STRIPE_WEBHOOK_SECRET: 'whsec_readyzcombined',
  };
}, 60_000);

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(children.map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((resolve) => child.once('exit', resolve)) : null)));
  await sandbox?.close();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it("a process with the api and worker roles answers its API port's /readyz 503 naming heartbeat while its worker is superseded, as its metrics listener does", async () => {
  const [apiPort, metricsPort, otherMetrics] = [await freePort(), await freePort(), await freePort()];
  const api = `http://127.0.0.1:${apiPort}`;
  const metrics = `http://127.0.0.1:${metricsPort}`;
  // `serve` with its default roles (worker, webhooks, facts, api), as npm start and the image's CMD run it.
  serve([], { INTERLOCK_PORT: String(apiPort), INTERLOCK_METRICS_ADDR: `127.0.0.1:${metricsPort}` });
  const ready = await until('the combined process ready', async () => {
    const [viaApi, viaMetrics] = [await readyz(api), await readyz(metrics)];
    return viaApi?.status === 200 && viaMetrics?.status === 200 ? viaApi : null;
  }, 60_000);
  // Both probes of the process run one list of checks: its worker's among them.
  expect(ready.body.checks.map((check) => check.name)).toEqual((await readyz(metrics))?.body.checks.map((check) => check.name));
  expect(ready.body.checks.map((check) => check.name)).toEqual(expect.arrayContaining(['heartbeat', 'effects_worker', 'decisions_worker', 'recovery_worker', 'facts_worker']));

  // Another worker under the same id: the first process now sends nothing (worker_superseded).
  serve(['--roles', 'worker'], { INTERLOCK_METRICS_ADDR: `127.0.0.1:${otherMetrics}` });
  const viaMetrics = await until('the metrics listener unready (heartbeat)', async () => {
    const answer = await readyz(metrics);
    return answer?.status === 503 ? answer : null;
  });
  expect(viaMetrics.body.checks.find((check) => check.name === 'heartbeat')?.ok).toBe(false);

  // The same process, asked on its API port (the only port a container running the image's CMD publishes).
  const viaApi = await readyz(api);
  expect(viaApi?.status, JSON.stringify(viaApi?.body)).toBe(503);
  expect(viaApi?.body.status).toBe('unready');
  expect(viaApi?.body.checks.find((check) => check.name === 'heartbeat')).toMatchObject({ ok: false, detail: expect.stringContaining('INTERLOCK_WORKER_ID') });
}, 150_000);
