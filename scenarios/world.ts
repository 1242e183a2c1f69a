// A scenario's world: the sandbox (one of its own, so clocks and objects never mix between scenarios run at once)
// or Stripe test mode, a Redis key prefix of its own, one data directory (one signing key for every worker of
// the scenario), and the harness's own stores through the public entry.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { startSandbox, type Sandbox } from '../sandbox/index.js';
import { Cluster } from 'ioredis';
import { createLogger, loadConfig, openStores, type Config, type Stores } from '../src/interlock.js';
import { randomBytes } from 'node:crypto';
import { freePort } from '../src/interlock.js';
import { hex, keepDir, leftovers, startServe, verifierFor, type Backend, type Delays, type Worker, type World } from './harness.js';
import { createStripeHttp } from './stripe-http.js';

/**
 * `stripeApiBase`: where test mode's requests go (STRIPE_API_BASE, e.g. a proxy), null for Stripe itself.
 * `keepKeys`: leave the scenario's Redis keys when it closes (--keep-journals), instead of removing them.
 */
export type WorldOptions = { scenario: string; delays: Delays; redisUrl: string; unsafeDurability: boolean; testModeKey: string | null; stripeApiBase?: string | null; keepKeys?: boolean };

/** How long removing a scenario's keys may take before it gives up (ms). */
const REMOVE_KEYS_MS = 30_000;

/**
 * Removes every key under a scenario's prefix (its journals, approvals, alerts and BullMQ queues), on every master of
 * a cluster. A run on a REDIS_URL others use would otherwise leave them there for good. SCAN and UNLINK, a page at a
 * time: nothing else writes under the prefix once the scenario's processes have stopped.
 */
export async function removeScenarioKeys(stores: Stores, prefix: string): Promise<number> {
  // A Redis that is not there holds nothing of the run's; and the connection below waits for it without end.
  const unreachable = await stores.unreachable();
  if (unreachable !== null) throw new Error(`Redis does not answer: ${unreachable}`);
  const redis = stores.queueConnection();
  // A Redis that stops answering midway: closing the connection fails the command that waits for it.
  const bound = setTimeout(() => redis.disconnect(), REMOVE_KEYS_MS);
  let removed = 0;
  try {
    const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
    for (const node of nodes) {
      for (const pattern of [`${prefix}:*`, `${stores.bullmq.prefix}:*`]) {
        let cursor = '0';
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
          cursor = next;
          if (keys.length > 0) removed += await node.unlink(...keys);
        } while (cursor !== '0');
      }
    }
  } finally {
    clearTimeout(bound);
    redis.disconnect();
  }
  return removed;
}

/** The sandbox's key: it takes any test key. */
const SANDBOX_KEY = 'sk_test_scenarios';

/**
 * The INTERLOCK_* settings a scenario's processes take from the shell that ran the command: only what describes the
 * Redis the run was given. Every other one is a deployment's (the compose worker's metrics address, which every child
 * would bind; the production signing key, which would sign the sandbox's refunds; retired keys, host, port, tokens,
 * timings, a crash point) and would change what a cell does; what a cell needs is set below.
 */
const INHERITED_SETTINGS: ReadonlySet<string> = new Set(['INTERLOCK_REDIS_CLUSTER']);
/** Other variables a child must not inherit: the deployment's Stripe endpoint secret, the model's key. */
const CLEARED = ['STRIPE_WEBHOOK_SECRET', 'ANTHROPIC_API_KEY'];

/** Whether a child of the scenario takes this variable from the shell that ran the command. */
function inherited(name: string): boolean {
  return name.startsWith('INTERLOCK_') ? INHERITED_SETTINGS.has(name) : !CLEARED.includes(name);
}

export async function openWorld(options: WorldOptions): Promise<World & { close(): Promise<void> }> {
  let sandbox: Sandbox | null = null;
  const backend: Backend = options.testModeKey === null ? 'sandbox' : 'test_mode';
  if (backend === 'sandbox') sandbox = await startSandbox({ port: 0, host: '127.0.0.1', delays: options.delays, logger: pino({ level: 'silent' }) });
  const secretKey = options.testModeKey ?? SANDBOX_KEY;
  const apiBase = sandbox?.url ?? (backend === 'test_mode' ? (options.stripeApiBase ?? null) : null);
  const dataDir = mkdtempSync(join(tmpdir(), `interlock-${options.scenario}-`));
  keepDir(dataDir);
  const env: NodeJS.ProcessEnv = {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => inherited(name))),
    REDIS_URL: options.redisUrl,
    INTERLOCK_KEY_PREFIX: `scenario-${options.scenario}-${hex(4)}`,
    INTERLOCK_DATA_DIR: dataDir,
    STRIPE_SECRET_KEY: secretKey,
    INTERLOCK_LOG_LEVEL: 'warn',
    ...(apiBase === null ? {} : { STRIPE_API_BASE: apiBase }),
    ...(options.unsafeDurability ? { INTERLOCK_UNSAFE_DURABILITY: '1' } : {}),
  };
  if (apiBase === null) delete env.STRIPE_API_BASE;
  // What this world started so far goes with it when it cannot open: the sandbox's port and the data directory.
  const abandon = async (): Promise<void> => {
    await sandbox?.close();
    rmSync(dataDir, { recursive: true, force: true });
    leftovers.dirs.delete(dataDir);
  };
  let config: Config;
  let stores: Stores;
  try {
    config = loadConfig(env);
    // The harness's own stores log only errors: stderr carries the progress line, and what the gate raised is in the JSON.
    stores = await openStores(config, { failFast: true, logger: createLogger('error') });
  } catch (error) {
    await abandon();
    throw error;
  }
  const prefix = config.keyPrefix;
  const fast = options.delays === 'fast' && backend === 'sandbox';
  // The support API the gate's agents propose through, up for the whole scenario (it never crashes).
  const token = randomBytes(24).toString('base64url');
  const port = await freePort();
  const partial = { env, stores, config } as unknown as World;
  // Whatever the run wrote under its prefix goes when it ends, a failed run's too, unless it was asked to stay.
  // `report`: say when they could not be removed; not when the world failed to open, whose own error says why.
  const tidy = async (report: boolean) => {
    if (options.keepKeys === true) {
      process.stderr.write(`Kept the Redis keys of ${options.scenario} (--keep-journals): ${prefix}:* and ${stores.bullmq.prefix}:*\n`);
      return;
    }
    await removeScenarioKeys(stores, prefix).catch((error: unknown) => {
      if (!report) return;
      process.stderr.write(`Could not remove the Redis keys of ${options.scenario} (${error instanceof Error ? error.message : String(error)}); they are under ${prefix}:* and ${stores.bullmq.prefix}:*, and can be removed with \`redis-cli --scan --pattern '${prefix}:*'\` piped to \`xargs redis-cli unlink\` (the same for the second pattern).\n`);
    });
  };
  let api: Worker;
  try {
    api = await startServe(partial, ['--roles', 'api', '--port', String(port)], { INTERLOCK_API_TOKENS: `scenario-agent:support:${token}` });
  } catch (error) {
    await tidy(false);
    await stores.close();
    await abandon();
    throw error;
  }
  let queue: Promise<unknown> = Promise.resolve();
  return {
    api: { url: `http://127.0.0.1:${port}`, token },
    exclusive<T>(work: () => Promise<T>): Promise<T> {
      const turn = queue.then(work, work);
      queue = turn.catch(() => undefined);
      return turn;
    },
    backend,
    delays: options.delays,
    stripe: createStripeHttp({ secretKey, apiBase }),
    control: sandbox?.control ?? null,
    env,
    config,
    stores,
    verifyReceipt: verifierFor(stores),
    poll: fast ? { fastMs: 20, slowMs: 50 } : { fastMs: 500, slowMs: 1000 },
    async close() {
      try {
        await api.stop();
      } finally {
        await tidy(true);
        await stores.close();
        await abandon();
      }
    },
  };
}

