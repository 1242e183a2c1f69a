// The chaos run's world: the sandbox in this process, a private durable redis-server on a port that stays its own
// across SIGKILLs (the serves' REDIS_URL names it, and a restart replays its append-only file), and several full
// `interlock serve` processes sharing it, each with the webhook endpoint registered at the sandbox for its port. The
// support API of any live serve is the only way in. Every process goes through the harness (its leftovers and the
// run's watchdog), so an interrupted or killed run leaves none behind.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { startSandbox, type Sandbox } from '../sandbox/index.js';
import { keepDir, leftovers, run, startServe, withTimeout, type Delays, type Running, type Worker } from './harness.js';
import { createStripeHttp, type StripeHttp } from './stripe-http.js';

export type Role = 'support' | 'approver' | 'auditor' | 'operator';
export type ApiAnswer = { status: number; body: Record<string, unknown> | null };

export type ChaosWorld = {
  sandbox: Sandbox;
  stripe: StripeHttp;
  publicPem: string;
  redis: { url: string; kill(): Promise<number | null>; start(): Promise<void> };
  serves: ChaosServe[];
  /** One call to one serve's API; throws on a transport failure. */
  api(serve: ChaosServe, method: string, path: string, role: Role, body?: unknown): Promise<ApiAnswer>;
  close(): Promise<void>;
};

export type ChaosServe = { index: number; url: string; alive(): boolean; start(): Promise<void>; kill(): Promise<number | null> };

/** The variables of the shell a serve does not take (world.ts's rule): a deployment's settings, secrets and model key. */
function inherited(name: string): boolean {
  return name.startsWith('INTERLOCK_') ? name === 'INTERLOCK_REDIS_CLUSTER' : !['STRIPE_WEBHOOK_SECRET', 'ANTHROPIC_API_KEY'].includes(name);
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * `count` ports free now in 30000-39999, chosen up front: the Redis must come back on its own port, and each serve on
 * the port its webhook endpoint was registered for.
 */
async function choosePorts(count: number): Promise<number[]> {
  for (;;) {
    const base = 30_000 + Math.floor(Math.random() * (9_999 - count));
    const ports = Array.from({ length: count }, (_, i) => base + i);
    const free = await Promise.all(ports.map(portFree));
    if (free.every(Boolean)) return ports;
  }
}

/** SIGKILL, and the exit awaited; the pid it had, or null when it was not running. */
async function sigkill(running: Running | null): Promise<number | null> {
  if (running === null || running.child.exitCode !== null || running.child.signalCode !== null) return null;
  running.child.kill('SIGKILL');
  await running.exited;
  return running.child.pid ?? null;
}

async function redisAnswers(port: number): Promise<boolean> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** Settings every serve of the run shares: short recovery and reconcile intervals, so a run settles in seconds. */
const SERVE_SETTINGS = { INTERLOCK_RECOVERY_INTERVAL_MS: '3000', INTERLOCK_RECONCILE_INTERVAL_MS: '15000', INTERLOCK_CONCURRENCY: '8', INTERLOCK_API_RATE_LIMIT: '0', INTERLOCK_LOG_LEVEL: 'warn' };

export async function openChaosWorld(options: { serves: number; delays: Delays }): Promise<ChaosWorld> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-chaos-'));
  keepDir(dir);
  const [sandboxPort, redisPort, ...servePorts] = await choosePorts(2 + options.serves);
  if (sandboxPort === undefined || redisPort === undefined) throw new Error('no ports were chosen');
  const sandbox = await startSandbox({ port: sandboxPort, host: '127.0.0.1', delays: options.delays, logger: pino({ level: 'silent' }) });
  const stripe = createStripeHttp({ secretKey: 'sk_test_chaos', apiBase: sandbox.url });
  const redisDir = join(dir, 'redis');
  mkdirSync(redisDir);
  // The durability a deployment's private Redis has (append-only, fsync always): a SIGKILL loses nothing acknowledged.
  const redisArgs = ['--port', String(redisPort), '--bind', '127.0.0.1', '--dir', redisDir, '--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--save', '', '--logfile', join(redisDir, 'redis.log')];
  let redisProcess: Running | null = null;
  const redis = {
    url: `redis://127.0.0.1:${redisPort}`,
    kill: () => sigkill(redisProcess),
    async start() {
      redisProcess = run('redis-server', redisArgs, { PATH: process.env.PATH ?? '' });
      const started = redisProcess;
      await withTimeout(
        (async () => {
          while (!(await redisAnswers(redisPort))) {
            if (started.child.exitCode !== null) throw new Error(`redis-server exited at start: ${started.stderr().slice(-500)}`);
            await sleep(50);
          }
        })(),
        20_000,
        'redis-server did not answer within 20 s',
      );
    },
  };
  const close = async () => {
    for (const serve of serves) await serve.kill();
    await redis.kill();
    await sandbox.close();
    rmSync(dir, { recursive: true, force: true });
    leftovers.dirs.delete(dir);
  };
  const serves: ChaosServe[] = [];
  try {
    await redis.start();
    // One signing key for every serve: a receipt any of them signed verifies with the run's public key.
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const keyFile = join(dir, 'signing-key.pem');
    writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
    const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const tokens: Record<Role, string> = { support: randomBytes(18).toString('hex'), approver: randomBytes(18).toString('hex'), auditor: randomBytes(18).toString('hex'), operator: randomBytes(18).toString('hex') };
    const secrets: string[] = [];
    for (const port of servePorts) {
      const endpoint = await stripe.post('/v1/webhook_endpoints', { url: `http://127.0.0.1:${port}/webhooks/stripe`, enabled_events: ['*'] });
      secrets.push(String(endpoint.secret));
    }
    const env: NodeJS.ProcessEnv = {
      ...Object.fromEntries(Object.entries(process.env).filter(([name]) => inherited(name))),
      ...SERVE_SETTINGS,
      REDIS_URL: redis.url,
      INTERLOCK_KEY_PREFIX: `chaos-${randomBytes(4).toString('hex')}`,
      INTERLOCK_SIGNING_KEY_FILE: keyFile,
      INTERLOCK_API_TOKENS: (Object.entries(tokens) as [Role, string][]).map(([role, token]) => `chaos-${role}:${role}:${token}`).join(','),
      STRIPE_SECRET_KEY: 'sk_test_chaos',
      STRIPE_API_BASE: sandbox.url,
      STRIPE_WEBHOOK_SECRET: secrets.join(','),
    };
    for (const [index, port] of servePorts.entries()) {
      let current: Worker | null = null;
      // A data directory each: a serve's service file and locks are its own.
      const serveEnv = { INTERLOCK_DATA_DIR: join(dir, `serve-${index}`) };
      serves.push({
        index,
        url: `http://127.0.0.1:${port}`,
        alive: () => current !== null && current.child.exitCode === null && current.child.signalCode === null,
        async start() {
          current = await startServe({ env }, ['--roles', 'api,webhooks,worker,facts', '--port', String(port)], serveEnv);
        },
        kill: () => sigkill(current),
      });
    }
    await Promise.all(serves.map((serve) => serve.start()));
    const api: ChaosWorld['api'] = async (serve, method, path, role, body) => {
      const response = await fetch(`${serve.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${tokens[role]}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(40_000),
      });
      const text = await response.text();
      let parsed: Record<string, unknown> | null = null;
      try {
        parsed = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // Not JSON (a proxy's or a dying process's answer): the status says enough.
      }
      return { status: response.status, body: parsed };
    };
    return { sandbox, stripe, publicPem, redis, serves, api, close };
  } catch (error) {
    await close();
    throw error;
  }
}
