// Redis stores for one CLI command, opened and closed around it (openStores: no heartbeat, no sends). A command
// that cannot reach Redis says so in one line and exits 2.
import { isRedisTimeout, loadConfig, openStores, redactSecrets, type Stores } from '../interlock.js';
import { journalOf } from '../interlock.js';
import { loadOrCreateSigningKey } from '../keys/key-store.js';
import type { Journal } from '../redis/journal.js';
import { CliFailure, EXIT_BAD_INPUT } from './failure.js';

export type CliStores = { stores: Stores; journal: Journal; approvals: Stores['approvals']; config: Stores['config'] };

/** Where REDIS_URL came from when the environment did not set it: the file a service (`npm start`) wrote. */
type ServiceSource = { file: string; pid: number | null; running: boolean };
let fromService: ServiceSource | null = null;

export function redisUrlFromService(source: ServiceSource): void {
  fromService = source;
}

/** What to do about a Redis that does not answer, or refuses what REDIS_URL says (its password, its certificate). */
export const REDIS_URL_ADVICE = 'Start Redis or set REDIS_URL (its address, user and password; for rediss://, a certificate Node trusts, e.g. with NODE_EXTRA_CA_CERTS).';

function unreachableAdvice(): string {
  if (fromService === null) return REDIS_URL_ADVICE;
  const service = `the service that wrote ${fromService.file}${fromService.pid === null ? '' : ` (pid ${fromService.pid})`}`;
  // A stopped `npm start` took its private Redis with it; its journal is on disk and comes back with it.
  return fromService.running
    ? `That is the Redis of ${service}, which still runs; check it, or set REDIS_URL.`
    : `That is the Redis of ${service}, which is not running: start it again (\`npm start\`) to reach its journal, or set REDIS_URL for another Redis.`;
}

export async function withStores(run: (stores: CliStores) => Promise<void>): Promise<void> {
  // A command's answer is its output: the service's info lines (a proposal recorded, a chain read) are noise on its
  // stderr, so a command logs warnings and worse unless INTERLOCK_LOG_LEVEL asks for more.
  const configured = loadConfig();
  const config = process.env.INTERLOCK_LOG_LEVEL === undefined ? { ...configured, logLevel: 'warn' as const } : configured;
  // A key file others can read is said in a line of its own: a command's warnings are read by a person.
  const { key, exposure } = loadOrCreateSigningKey(config);
  if (exposure !== null) process.stderr.write(`${exposure.message}\n`);
  const stores = await openStores(config, { failFast: true, signingKey: key });
  const unreachable = (error: unknown) =>
    new CliFailure(`Cannot reach Redis at ${redactSecrets(config.redisUrl)} (${error instanceof Error ? error.message : String(error)}); nothing was changed. ${unreachableAdvice()}`, EXIT_BAD_INPUT, { cause: error });
  const why = await stores.unreachable();
  if (why !== null) {
    await stores.close().catch(() => undefined);
    throw unreachable(new Error(why));
  }
  try {
    await run({ stores, journal: journalOf(stores), approvals: stores.approvals, config });
  } catch (error) {
    // A command Redis took but did not answer may still run when Redis wakes: the command cannot say it did nothing.
    if (isRedisTimeout(error)) {
      throw new CliFailure(`Redis at ${redactSecrets(config.redisUrl)} stopped answering within INTERLOCK_REDIS_COMMAND_TIMEOUT_MS=${config.redisCommandTimeoutMs} ms, so what this command asked may or may not have been done. Once Redis answers, check (for instance with \`interlock approvals describe\` or \`interlock effect\`) before running it again.`, EXIT_BAD_INPUT, { cause: error });
    }
    // A command that failed because the connection went away says so, whatever error the client raised.
    if (!(await stores.ping())) throw unreachable(error);
    throw error;
  } finally {
    await stores.close().catch(() => undefined);
  }
}
