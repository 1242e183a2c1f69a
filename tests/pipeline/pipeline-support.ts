// Shared wiring for the pipeline tests (issue 9 §6-§7): real `interlock serve --roles worker` processes against an
// in-process sandbox, a test-side view of the same Redis prefix (to grant approvals, propose through the queue and
// read receipts), and the answers every test checks: each effect settled, its receipt verified with the key the
// workers sign with.
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { createEffectsQueue, type EffectsQueue } from '../../queues/effects.js';
import { currentOutcome, loadConfig, openStores, stripeSide, verify, CREDIT_FACTS, REFUND_FACTS, effectIdFor, type Config, type Effect, type StripeSide, type Stores, type Verification } from '../../src/interlock.js';
import type { Sandbox } from '../../sandbox/index.js';
import { REPO, tempDir } from '../cli/run-cli.js';
import { REDIS_URL, testKey } from '../support/harness.js';

const BIN = join(REPO, 'bin', 'interlock.js');

export type WorkerProcess = {
  child: ChildProcess;
  /** The worker's own clock reading (ms) when it logged that it serves: recovery at start runs from then on. */
  ready: Promise<number>;
  /** How the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  logs(): string;
  /** SIGTERM, then waits for the exit (SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<void>;
};

/** Workers still running: killed when the test's process exits, so a test that timed out before its stop() leaves none. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts `node bin/interlock.js serve --roles worker` (or `args`) with `env` over the test's own environment. */
export function spawnWorker(env: Record<string, string>, args: readonly string[] = ['serve', '--roles', 'worker']): WorkerProcess {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: REPO, env: { ...process.env, INTERLOCK_LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let logs = '';
  let readyAt: ((at: number) => void) | null = null;
  const ready = new Promise<number>((resolve, reject) => {
    readyAt = resolve;
    child.once('exit', (code, signal) => reject(new Error(`the worker exited (${signal ?? code}) before it served:\n${logs.slice(-4000)}`)));
  });
  ready.catch(() => undefined);
  const onData = (chunk: Buffer) => {
    logs += chunk.toString();
    if (readyAt !== null) {
      const line = logs.split('\n').find((text) => text.includes('"msg":"interlock serving"'));
      if (line !== undefined) {
        readyAt((JSON.parse(line) as { time: number }).time);
        readyAt = null;
      }
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return {
    child,
    ready,
    exited,
    logs: () => logs,
    async stop(graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A settled effect: its outcome, its receipt's verification, and when (Redis clock) it was first dispatched and settled. */
export type Answer = { outcome: string; verification: Verification; dispatchedAt: number | null; settledAt: number };

export type Pipeline = {
  config: Config;
  stores: Stores;
  queue: EffectsQueue;
  stripe: StripeSide;
  dataDir: string;
  /** The environment a worker process of this pipeline runs with (same Redis prefix, sandbox and signing key). */
  env(extra?: Record<string, string>): Record<string, string>;
  /** Reads the effect's facts now (unless given), records the proposal and queues it, as `interlock refund|credit` does. */
  propose(request: { requestId: string; approval: string; effect: Effect & Record<string, unknown>; premises?: Record<string, unknown> }): Promise<string>;
  /** The effect's outcome once settled, with its receipt's verification; null while open or unsettled. */
  settled(effectId: string): Promise<Answer | null>;
  /** Waits until every effect is settled; throws naming the ones that are not after `timeoutMs`. */
  untilSettled(effectIds: readonly string[], timeoutMs: number): Promise<Map<string, Answer>>;
  close(): Promise<void>;
};

/** A private key prefix on `redisUrl`, a data dir with the signing key the workers use, and the sandbox as Stripe. */
export async function openPipeline(sandbox: Sandbox, options: { redisUrl?: string; config?: Partial<Config> } = {}): Promise<Pipeline> {
  const redisUrl = options.redisUrl ?? REDIS_URL;
  const data = tempDir('pipeline');
  const key = testKey();
  const keyFile = join(data.dir, 'signing-key.pem');
  writeFileSync(keyFile, key.privatePem, { mode: 0o600 });
  // The service's own timing (a 30 s send timeout, 1 s heartbeats): what the worker processes run with, and what a
  // test-side sender needs on a loaded machine.
  const config: Config = { ...loadConfig({}), redisUrl, keyPrefix: `pl${randomBytes(5).toString('hex')}`, unsafeDurability: true, logLevel: 'silent', stripeSecretKey: 'sk_test_pipelineTests0001', stripeApiBase: sandbox.url, dataDir: data.dir, ...options.config };
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: key.key });
  const queue = createEffectsQueue(stores, { backoffMs: 200 });
  const stripe = stripeSide({ ...config, crashAt: null });
  const publicKeys = key.publicKeys;

  const partitions = new Map<string, string>();

  /** The outcome without verifying (cheap: the claim's state, then the chain only once no dispatch is open). */
  async function outcomeNow(effectId: string) {
    let partition = partitions.get(effectId);
    if (partition === undefined) {
      partition = (await stores.journal.partitionOf(effectId)) ?? '';
      if (partition !== '') partitions.set(effectId, partition);
    }
    const { state } = await stores.journal.readState(partition, effectId);
    if (state.open) return null;
    const receipt = await stores.journal.receipt(effectId);
    const outcome = receipt === null ? null : currentOutcome(receipt.entries);
    return outcome === null || receipt === null ? null : { outcome, receipt };
  }

  function answerOf(found: NonNullable<Awaited<ReturnType<typeof outcomeNow>>>): Answer {
    const { receipt, outcome } = found;
    return {
      outcome,
      verification: verify(JSON.parse(JSON.stringify(receipt)), { publicKeys }),
      dispatchedAt: receipt.entries.find((entry) => entry.kind === 'DISPATCHED')?.at ?? null,
      settledAt: receipt.entries.at(-1)?.at ?? 0,
    };
  }

  return {
    config,
    stores,
    queue,
    stripe,
    dataDir: data.dir,
    env: (extra = {}) => ({
      REDIS_URL: redisUrl,
      INTERLOCK_KEY_PREFIX: config.keyPrefix,
      INTERLOCK_UNSAFE_DURABILITY: '1',
      INTERLOCK_DATA_DIR: data.dir,
      INTERLOCK_SIGNING_KEY_FILE: keyFile,
      STRIPE_SECRET_KEY: config.stripeSecretKey ?? '',
      STRIPE_API_BASE: sandbox.url,
      ...extra,
    }),
    async propose({ requestId, approval, effect, premises: given }) {
      const effectId = effectIdFor({ requestId, effect });
      const premises = given ?? (await stripe.target.readFacts(effectId, effect, effect.kind === 'refund' ? REFUND_FACTS : CREDIT_FACTS, { timeoutMs: 30_000 }));
      const recorded = await queue.propose({ requestId, agent: 'pipeline-test', approval, premises, effect });
      if (recorded.status !== 'recorded') throw new Error(`the proposal of ${requestId} was not recorded: ${JSON.stringify(recorded)}`);
      return recorded.effectId;
    },
    async settled(effectId) {
      const found = await outcomeNow(effectId);
      return found === null ? null : answerOf(found);
    },
    async untilSettled(effectIds, timeoutMs) {
      const giveUp = Date.now() + timeoutMs;
      const done = new Map<string, Answer>();
      for (;;) {
        const open = effectIds.filter((effectId) => !done.has(effectId));
        for (let i = 0; i < open.length; i += 50) {
          const found = await Promise.all(open.slice(i, i + 50).map(async (effectId) => [effectId, await outcomeNow(effectId)] as const));
          for (const [effectId, settled] of found) if (settled !== null) done.set(effectId, answerOf(settled));
        }
        if (done.size === effectIds.length) return done;
        if (Date.now() > giveUp) {
          const stuck = await Promise.all(effectIds.filter((id) => !done.has(id)).map(async (id) => {
            const receipt = await stores.journal.receipt(id);
            const job = await queue.queue.getJob(id);
            return `${id.slice(0, 12)} (journal ${receipt?.entries.map((entry) => entry.kind).join(',') ?? 'none'}; job ${job === undefined ? 'none' : `${await job.getState()}, ${job.attemptsMade} attempts, ${job.failedReason ?? ''}`})`;
          }));
          throw new Error(`${stuck.length} of ${effectIds.length} effects did not settle within ${timeoutMs} ms: ${stuck.join('; ')}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    },
    async close() {
      await queue.close();
      await stores.close();
      await dropPrefix(redisUrl, config.keyPrefix).catch(() => undefined);
      data.remove();
    },
  };
}

/** Deletes every key of a prefix: the journal's and the queues' (`{prefix-queues}:…`). */
export async function dropPrefix(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  try {
    for (const pattern of [`${prefix}:*`, `{${prefix}-queues}:*`]) {
      const stale = await redis.keys(pattern);
      for (let i = 0; i < stale.length; i += 500) await redis.del(...stale.slice(i, i + 500));
    }
  } finally {
    redis.disconnect();
  }
}
