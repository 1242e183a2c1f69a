// A scenario's world: the sandbox (one of its own, so clocks and objects never mix between scenarios run at once)
// or Stripe test mode, a Redis key prefix of its own, one data directory (one signing key for every worker of
// the scenario), and the harness's own stores through the public entry.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { startSandbox, type Sandbox } from '../sandbox/index.js';
import { createLogger, loadConfig, openStores } from '../src/interlock.js';
import { randomBytes } from 'node:crypto';
import { freePort } from '../src/interlock.js';
import { hex, leftovers, startServe, verifierFor, type Backend, type Delays, type Worker, type World } from './harness.js';
import { createStripeHttp } from './stripe-http.js';

/** `stripeApiBase`: where test mode's requests go (STRIPE_API_BASE, e.g. a proxy), null for Stripe itself. */
export type WorldOptions = { scenario: string; delays: Delays; redisUrl: string; unsafeDurability: boolean; testModeKey: string | null; stripeApiBase?: string | null };

/** The sandbox's key: it takes any test key. */
const SANDBOX_KEY = 'sk_test_scenarios';

/** Variables a child must not inherit from the shell that ran the command (they would change what a cell does). */
const CLEARED = ['INTERLOCK_CRASH_AT', 'INTERLOCK_WORKER_ID', 'INTERLOCK_API_TOKENS', 'INTERLOCK_PORT', 'STRIPE_WEBHOOK_SECRET', 'ANTHROPIC_API_KEY'];

export async function openWorld(options: WorldOptions): Promise<World & { close(): Promise<void> }> {
  let sandbox: Sandbox | null = null;
  const backend: Backend = options.testModeKey === null ? 'sandbox' : 'test_mode';
  if (backend === 'sandbox') sandbox = await startSandbox({ port: 0, host: '127.0.0.1', delays: options.delays, logger: pino({ level: 'silent' }) });
  const secretKey = options.testModeKey ?? SANDBOX_KEY;
  const apiBase = sandbox?.url ?? (backend === 'test_mode' ? (options.stripeApiBase ?? null) : null);
  const dataDir = mkdtempSync(join(tmpdir(), `interlock-${options.scenario}-`));
  leftovers.dirs.add(dataDir);
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !CLEARED.includes(key)));
  const env: NodeJS.ProcessEnv = {
    ...inherited,
    REDIS_URL: options.redisUrl,
    INTERLOCK_KEY_PREFIX: `scenario-${options.scenario}-${hex(4)}`,
    INTERLOCK_DATA_DIR: dataDir,
    STRIPE_SECRET_KEY: secretKey,
    INTERLOCK_LOG_LEVEL: 'warn',
    ...(apiBase === null ? {} : { STRIPE_API_BASE: apiBase }),
    ...(options.unsafeDurability ? { INTERLOCK_UNSAFE_DURABILITY: '1' } : {}),
  };
  if (apiBase === null) delete env.STRIPE_API_BASE;
  const config = loadConfig(env);
  // The harness's own stores log only errors: stderr carries the progress line, and what the gate raised is in the JSON.
  const stores = await openStores(config, { failFast: true, logger: createLogger('error') });
  const fast = options.delays === 'fast' && backend === 'sandbox';
  // The support API the gate's agents propose through, up for the whole scenario (it never crashes).
  const token = randomBytes(24).toString('base64url');
  const port = await freePort();
  const partial = { env, stores, config } as unknown as World;
  let api: Worker;
  try {
    api = await startServe(partial, ['--roles', 'api', '--port', String(port)], { INTERLOCK_API_TOKENS: `scenario-agent:support:${token}` });
  } catch (error) {
    await stores.close();
    await sandbox?.close();
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
      await api.stop();
      await stores.close();
      await sandbox?.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

