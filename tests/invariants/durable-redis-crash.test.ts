// I1 needs a DISPATCHED that survives a crash of Redis itself. On a private redis-server with AOF and
// `appendfsync always`, a worker dispatches and is SIGKILLed before the send, then Redis is SIGKILLed too and
// restarted from its files: the DISPATCHED is still there and recovery settles the effect, landed once.
// The gate also refuses a Redis that could forget that entry, unless the operator opts out by name.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDispatch } from '../../src/core/decisions.js';
import { verify } from '../../src/core/verify.js';
import { createInterlock, type Interlock } from '../../src/interlock.js';
import { DurabilityError } from '../../src/redis/durability.js';
import { approvalTerms, refundProposal, sleep, testConfig, testKey } from '../support/harness.js';
import { createRedisTarget, type RedisTarget } from '../support/redis-target.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const WORKER = join(ROOT, 'tests', 'support', 'durability-worker.ts');

type PrivateRedis = { port: number; dir: string; args: string[]; process: ChildProcess; url: string };
const servers: PrivateRedis[] = [];
const children: ChildProcess[] = [];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function waitForPing(url: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    // A refused connection is the expected answer until the server is up; connect() reports it.
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      if ((await probe.ping()) === 'PONG') return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`private redis-server on ${url} never answered: ${String(error)}`, { cause: error });
    } finally {
      probe.disconnect();
    }
    await sleep(50);
  }
}

function launch(server: Omit<PrivateRedis, 'process'>): PrivateRedis {
  const child = spawn('redis-server', server.args, { cwd: server.dir, stdio: 'ignore' });
  return { ...server, process: child };
}

async function startRedis(persistence: string[]): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'interlock-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--daemonize', 'no', '--logfile', join(dir, 'redis.log'), ...persistence];
  const server = launch({ port, dir, args, url: `redis://127.0.0.1:${port}` });
  servers.push(server);
  await waitForPing(server.url);
  return server;
}

function stopped(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

let durable: PrivateRedis;
let memoryOnly: PrivateRedis;

beforeAll(async () => {
  [durable, memoryOnly] = await Promise.all([startRedis(['--appendonly', 'yes', '--appendfsync', 'always']), startRedis(['--appendonly', 'no'])]);
});

// Runs even when a test failed: no private redis-server or worker outlives the file.
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const server of servers) {
    if (server.process.exitCode === null && server.process.signalCode === null) server.process.kill('SIGKILL');
    await stopped(server.process);
  }
  for (const dir of new Set(servers.map((server) => server.dir))) rmSync(dir, { recursive: true, force: true });
});

async function gateOn(url: string, options: { unsafeDurability: boolean; prefix?: string; key?: ReturnType<typeof testKey> }): Promise<{ interlock: Interlock; target: RedisTarget; redis: Redis; close(): Promise<void> }> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  const config = testConfig({ redisUrl: url, unsafeDurability: options.unsafeDurability, ...(options.prefix ? { keyPrefix: options.prefix } : {}) });
  const target = createRedisTarget({ redis, prefix: config.keyPrefix, tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  try {
    const interlock = await createInterlock({ config, target, signingKey: (options.key ?? testKey()).key, logger: pino({ level: 'silent' }), redis });
    return { interlock, target, redis, close: async () => { await interlock.close(); await redis.quit(); } };
  } catch (error) {
    redis.disconnect();
    throw error;
  }
}

describe('the gate refuses a Redis that can lose an acknowledged DISPATCHED', () => {
  it('refuses a memory-only Redis with a DurabilityError that tells the operator how to fix it or opt out', async () => {
    const refusal = await gateOn(memoryOnly.url, { unsafeDurability: false }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(DurabilityError);
    const message = (refusal as DurabilityError).message;
    expect(message).toContain('append-only file is off');
    expect(message).toContain('appendonly yes');
    expect(message).toContain('appendfsync always');
    expect(message).toContain('INTERLOCK_UNSAFE_DURABILITY=1');
  });

  it('refuses AOF with appendfsync everysec, since the last second of entries can be lost', async () => {
    const admin = new Redis(memoryOnly.url);
    try {
      await admin.config('SET', 'appendonly', 'yes');
      await admin.config('SET', 'appendfsync', 'everysec');
      const refusal = await gateOn(memoryOnly.url, { unsafeDurability: false }).then(() => null, (error: unknown) => error);
      expect(refusal).toBeInstanceOf(DurabilityError);
      expect((refusal as DurabilityError).message).toContain('appendfsync is everysec, not always');
    } finally {
      await admin.config('SET', 'appendonly', 'no');
      await admin.quit();
    }
  });

  it('sends on a memory-only Redis only when the operator opts out explicitly, and says so', async () => {
    const gate = await gateOn(memoryOnly.url, { unsafeDurability: true });
    try {
      expect(gate.interlock.durability).toMatchObject({ durable: false, optedOut: true });
    } finally {
      await gate.close();
    }
  });

  it('accepts a Redis with appendonly yes and appendfsync always without any opt-out', async () => {
    const gate = await gateOn(durable.url, { unsafeDurability: false });
    try {
      expect(gate.interlock.durability).toMatchObject({ durable: true, optedOut: false, appendonly: 'yes', appendfsync: 'always' });
    } finally {
      await gate.close();
    }
  });
});

describe('a DISPATCHED acknowledged by a durable Redis survives SIGKILL of the worker and of Redis', () => {
  it('keeps the DISPATCHED across a Redis crash and recovery resends it once under the same key (COMMITTED_BY_RETRY)', async () => {
    const key = testKey();
    const prefix = `t-durable-${process.pid}`;
    const setup = await gateOn(durable.url, { unsafeDurability: false, prefix, key });
    const terms = approvalTerms({ scope: 'payment:pi_durable' });
    await setup.interlock.approvals.grant(terms);
    await setup.target.setFacts('payment:pi_durable', { chargebacks: [], refunded_by_others: 0 });
    const proposal = refundProposal({ approval: terms.id, paymentIntent: 'pi_durable' });
    const effectId = setup.interlock.gate.effectIdOf(proposal);
    await setup.close();

    const dir = durable.dir;
    const keyFile = join(dir, 'signing-key.pem');
    writeFileSync(keyFile, key.privatePem, { mode: 0o600 });
    const worker = spawn(process.execPath, ['--import', 'tsx', WORKER], {
      cwd: ROOT,
      env: { ...process.env, REDIS_URL: durable.url, DURABLE_PREFIX: prefix, DURABLE_KEY_FILE: keyFile, DURABLE_PROPOSAL: JSON.stringify(proposal), DURABLE_WORKER_ID: 'durable-worker', INTERLOCK_LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(worker);
    const output: string[] = [];
    worker.stderr?.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the worker never reached the send: ${output.join('')}`)), 30_000);
      worker.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
        output.push(chunk);
        if (chunk.includes(`sending ${effectId}`)) {
          clearTimeout(timer);
          resolve();
        }
      });
      worker.once('exit', (code) => reject(new Error(`the worker exited (${String(code)}) before the send: ${output.join('')}`)));
    });
    // The worker proved the Redis durable without an opt-out before it dispatched.
    expect(output.join('')).toContain('"durable":true');

    // Both die at once, right after the DISPATCHED was acknowledged and before the send.
    worker.kill('SIGKILL');
    durable.process.kill('SIGKILL');
    await Promise.all([stopped(worker), stopped(durable.process)]);
    expect(existsSync(join(dir, 'appendonlydir'))).toBe(true);
    const restarted = launch(durable);
    servers.push(restarted);
    await waitForPing(durable.url);

    const after = await gateOn(durable.url, { unsafeDurability: false, prefix, key });
    try {
      const { journal, gate } = after.interlock;
      const partition = await journal.partitionOf(effectId);
      expect(partition).toBe('payment:pi_durable');
      const entries = await journal.entries(partition ?? '', effectId);
      expect(entries.map((entry) => entry.kind)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED']);
      expect(openDispatch(entries)).toMatchObject({ owner: 'durable-worker', epoch: 1 });
      expect((await after.target.applications()).size).toBe(0);

      // The dead worker's heartbeat outlived the restart (AOF keeps its expiry); recovery waits exactly for it.
      let outcome: string | null = null;
      for (let pass = 0; pass < 40 && outcome === null; pass += 1) {
        const report = await gate.recover();
        outcome = report.settled.find((settled) => settled.effectId === effectId)?.outcome ?? null;
        if (outcome === null) await sleep(report.nextAt === null ? 100 : Math.max(10, Math.min(1_000, report.nextAt - (await journal.serverTime()) + 5)));
      }
      expect(outcome).toBe('COMMITTED_BY_RETRY');
      expect((await after.target.applications()).get(effectId)).toBe(1);
      const receipt = await journal.receipt(effectId);
      const verification = verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: key.publicKeys });
      expect(verification.problems).toEqual([]);
      expect(verification).toMatchObject({ valid: true, outcome: 'COMMITTED_BY_RETRY', happened: true, happenedOnce: true });
    } finally {
      await after.close();
    }
  }, 60_000);
});
