// Rule: a Redis outage that ends is waited out by `interlock serve` (README "Running it"), also while a refund's send
// is in progress at a slow Stripe: the worker aborts that send shortly before its heartbeat key could lapse (one
// warning saying how many), its outcome unknown and its claim kept, and the process (API, webhooks, workers) lives on;
// once Redis and Stripe are back it is ready again and recovery settles the refund, made once at Stripe. Before, the
// send watchdog SIGKILLed the whole process, which without a supervisor never came back.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Stripe from 'stripe';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { freePort, startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { startRedisCutProxy, type RedisCutProxy } from '../support/redis-cut-proxy.js';

const ROOT = join(import.meta.dirname, '..', '..');
const SUPPORT = 'itk_support_redisCutMidSend0123456789';
const APPROVER = 'itk_approver_redisCutMidSend012345678';

/**
 * A front to the sandbox that, while `slow`, passes a refund's POST on (the refund is made) but holds its answer until
 * `release()`, which ends the held connections.
 */
async function slowRefunds(sandbox: Sandbox): Promise<{ url: string; slow: boolean; held(): number; release(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const held = new Set<ServerResponse>();
  const front = {
    url: '',
    slow: true,
    held: () => held.size,
    release() {
      front.slow = false;
      for (const res of held) res.destroy();
      held.clear();
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const hold = front.slow && req.method === 'POST' && (req.url ?? '').startsWith('/v1/refunds');
    const upstream = httpRequest({ host: sandbox.host, port: sandbox.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      if (hold) {
        held.add(res);
        answer.resume();
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  front.url = `http://127.0.0.1:${port}`;
  return front;
}

let redis: PrivateRedis;
let cut: RedisCutProxy;
let sandbox: Sandbox;
let front: Awaited<ReturnType<typeof slowRefunds>>;
let child: ChildProcess;
let dir: string;
let api: string;
const logs: string[] = [];

async function until<T>(what: string, ask: () => Promise<T | null>, withinMs: number): Promise<T> {
  const giveUp = Date.now() + withinMs;
  for (;;) {
    const got = await ask().catch(() => null);
    if (got !== null) return got;
    if (Date.now() > giveUp) throw new Error(`${what} within ${withinMs} ms:\n${logs.slice(-30).join('')}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function post(path: string, token: string, body: unknown): Promise<number> {
  const answer = await fetch(`${api}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(20_000) });
  await answer.text();
  return answer.status;
}

const readyz = async () => (await fetch(`${api}/readyz`, { signal: AbortSignal.timeout(5_000) })).status;

beforeAll(async () => {
  redis = await startPrivateRedis(['--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction']);
  cut = await startRedisCutProxy({ host: '127.0.0.1', port: redis.port });
  sandbox = await startSandbox({ port: 0, delays: 'fast' });
  front = await slowRefunds(sandbox);
  dir = mkdtempSync(join(tmpdir(), 'interlock-redis-cut-mid-send-'));
  const port = await freePort();
  api = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    REDIS_URL: cut.url,
    INTERLOCK_KEY_PREFIX: `cutmidsend${randomBytes(3).toString('hex')}`,
    INTERLOCK_DATA_DIR: dir,
    INTERLOCK_PORT: String(port),
    INTERLOCK_HOST: '127.0.0.1',
    INTERLOCK_LOG_LEVEL: 'warn',
    STRIPE_SECRET_KEY: 'sk_test_redisCutMidSend01',
    STRIPE_API_BASE: front.url,
    INTERLOCK_API_TOKENS: `sam:support:${SUPPORT},ana:approver:${APPROVER}`,
    INTERLOCK_API_RATE_LIMIT: '0',
  };
  child = spawn(process.execPath, [join(ROOT, 'bin', 'interlock.js'), 'serve'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (chunk: Buffer) => logs.push(chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => logs.push(chunk.toString()));
  await until('serve ready', async () => ((await readyz()) === 200 ? true : null), 60_000);
}, 90_000);

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
  }
  await front?.close();
  await sandbox?.close();
  await cut?.close();
  await redis?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it('serve lives through a Redis cut longer than the heartbeat TTL while a refund waits at a slow Stripe, and the refund is settled, made once', async () => {
  const stripe = new Stripe('sk_test_redisCutMidSend01', { host: sandbox.host, port: sandbox.port, protocol: 'http' });
  const pi = (await stripe.paymentIntents.create({ amount: 5_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true })).id;
  const approval = `ap_cut_${randomBytes(3).toString('hex')}`;
  const requestId = `rq-cut-${randomBytes(3).toString('hex')}`;
  expect(await post('/v1/approvals', APPROVER, { id: approval, approver: 'ana@example.com', cap_cents: 1_000, scope: `payment:${pi}` })).toBe(201);
  expect(await post('/v1/refunds', SUPPORT, { request_id: requestId, payment_intent: pi, amount: 1_000, approval, agent: 'cut-bot' })).toBe(202);
  // The refund was made at Stripe; its answer is held: the send is in progress.
  await until('the refund made and its answer held', async () => (front.held() === 1 ? true : null), 30_000);
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(`exited ${code} ${signal}`)));

  cut.cut();
  // Past the heartbeat's TTL (4 s): the key lapses while the process lives.
  const warned = await Promise.race([exited, until('the aborted send warned of', async () => (logs.join('').includes('aborted the 1 send(s) in progress') ? 'warned' : null), 20_000)]);
  expect(warned, logs.slice(-20).join('')).toBe('warned');
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  cut.heal();
  front.release();
  expect(child.exitCode, logs.slice(-20).join('')).toBeNull();
  expect(child.signalCode, logs.slice(-20).join('')).toBeNull();
  expect(logs.join('')).not.toContain('killing the process');

  await until('serve ready again', async () => ((await readyz()) === 200 ? true : null), 60_000);
  const settled = await until('the refund settled', async () => {
    const answer = await fetch(`${api}/v1/effects?request=${encodeURIComponent(requestId)}`, { headers: { authorization: `Bearer ${SUPPORT}` } });
    const effect = ((await answer.json()) as { data?: { settled?: boolean; outcome?: string }[] }).data?.[0];
    return effect?.settled === true ? effect : null;
  }, 60_000);
  expect(settled.outcome).toMatch(/^COMMITTED/);
  expect((await stripe.refunds.list({ payment_intent: pi })).data).toHaveLength(1);
  expect(child.exitCode).toBeNull();
}, 150_000);
