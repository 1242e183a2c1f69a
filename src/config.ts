// One validated configuration, read from the environment once, with embedded defaults that run on a fresh
// machine. Every option is listed in the README's configuration table.
import { createRequire } from 'node:module';
import { BlockList, isIP } from 'node:net';
import { z } from 'zod';
import { InterlockError } from './core/errors.js';
import { givenSetting, quotedSetting, wholeNumberSetting } from './core/text.js';
import { redactSecrets, secretHint, shownSetting, shownUrl } from './core/redact.js';
import { STRIPE_DEDUP_WINDOW_MS, timingProblems, type TimingSetting } from './core/timing.js';
import { deciderEnvSchema } from './decider/config.js';
import { apiBaseSettingOf, readApiBase, readStripeKey, stripeSettingOf } from './stripe/settings.js';

/** Where the service keeps its files (signing key, tokens, service.json, a private Redis) when INTERLOCK_DATA_DIR is unset. */
export const DEFAULT_DATA_DIR = '.data';

/** The private Redis's `maxmemory` when INTERLOCK_REDIS_MAXMEMORY is unset (the README's "Retention" says how to size it). */
export const DEFAULT_REDIS_MAXMEMORY = '1gb';

/** The levels INTERLOCK_LOG_LEVEL may name: pino's, and `silent`. The sandbox keeps its own copy (sandbox/core/log.ts). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * The currencies Stripe takes a `currency` in (a customer balance transaction's included): lowercase ISO 4217 codes, as
 * Stripe lists them to a US account when it refuses any other (`Invalid currency: xyz. Stripe currently supports these
 * currencies: usd, aed, …`), and the three-decimal ones (bhd, jod, kwd, omr, tnd; src/core/money-text.ts), which Stripe
 * takes from accounts in their regions. The sandbox keeps its own copy (sandbox/core/money.ts, SUPPORTED_CURRENCIES),
 * the US account's list, since src/ and sandbox/ import nothing from each other; tests/config-credit-currency.test.ts
 * keeps the two in step.
 */
export const STRIPE_CURRENCIES: readonly string[] = [
  'usd', 'aed', 'afn', 'all', 'amd', 'ang', 'aoa', 'ars', 'aud', 'awg', 'azn', 'bam', 'bbd', 'bdt', 'bgn', 'bif', 'bmd',
  'bnd', 'bob', 'brl', 'bsd', 'bwp', 'byn', 'bzd', 'cad', 'cdf', 'chf', 'clp', 'cny', 'cop', 'crc', 'cve', 'czk', 'djf',
  'dkk', 'dop', 'dzd', 'egp', 'etb', 'eur', 'fjd', 'fkp', 'gbp', 'gel', 'gip', 'gmd', 'gnf', 'gtq', 'gyd', 'hkd', 'hnl',
  'hrk', 'htg', 'huf', 'idr', 'ils', 'inr', 'isk', 'jmd', 'jpy', 'kes', 'kgs', 'khr', 'kmf', 'krw', 'kyd', 'kzt', 'lak',
  'lbp', 'lkr', 'lrd', 'lsl', 'mad', 'mdl', 'mga', 'mkd', 'mmk', 'mnt', 'mop', 'mur', 'mvr', 'mwk', 'mxn', 'myr', 'mzn',
  'nad', 'ngn', 'nio', 'nok', 'npr', 'nzd', 'pab', 'pen', 'pgk', 'php', 'pkr', 'pln', 'pyg', 'qar', 'ron', 'rsd', 'rub',
  'rwf', 'sar', 'sbd', 'scr', 'sek', 'sgd', 'shp', 'sle', 'sos', 'srd', 'std', 'szl', 'thb', 'tjs', 'top', 'try', 'ttd',
  'twd', 'tzs', 'uah', 'ugx', 'uyu', 'uzs', 'vnd', 'vuv', 'wst', 'xaf', 'xcd', 'xof', 'xpf', 'yer', 'zar', 'zmw',
  'bhd', 'jod', 'kwd', 'omr', 'tnd',
];

/** A refused setting's value as a refusal opens with it (quotedSetting): `"warn x"`, or `the value given (43 characters, not shown)`. */
function givenValue(value: unknown): string {
  return typeof value === 'string' ? quotedSetting(value, 'the value given') : JSON.stringify(value);
}

/**
 * REDIS_URL as its refusal quotes it: a URL as shownUrl shows it (no user, password or query); a host with its port, an
 * IP address or localhost as written (`"127.0.0.1:6379"`, `"[::1]:6379"`, `"cache:6379"`: a URL without its scheme);
 * anything else by its length only. A swapped line of an env file puts a secret here, and a Redis password is often
 * short and may read like a host name (`hunter2hunter2`, a dotted one, a JWT), so a bare name is not quoted either.
 */
function givenRedisUrl(value: unknown): string {
  if (typeof value !== 'string') return givenSetting(value);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value) && URL.canParse(value)) return ` (given: ${shownUrl(value)})`;
  const host = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+))(?::([0-9]{1,5}))?$/.exec(value);
  const address = host?.[1] ?? host?.[2] ?? '';
  const plain = host !== null && (host[3] !== undefined || isIP(address) !== 0 || address === 'localhost');
  if (plain && redactSecrets(value) === value) return ` (given: ${JSON.stringify(value)})`;
  const hint = secretHint(value);
  return ` (given: ${hint === '…' ? `${value.length} characters, not shown` : hint})`;
}

/** STRIPE_WEBHOOK_SECRET as its refusal quotes it: each secret by its kind only (`whsec_…wxyz`), anything else by its length. */
function givenSecrets(value: unknown): string {
  if (typeof value !== 'string') return givenSetting(value);
  const each = value.split(',').map((entry) => {
    if (entry === '') return 'an empty entry';
    const hint = secretHint(entry);
    return hint === '…' ? `${entry.length} characters, not shown` : hint;
  });
  return ` (given: ${each.join(', ')})`;
}

/** Why INTERLOCK_CREDIT_CURRENCY is refused: a typo such as `uds` would otherwise show only as every credit refused by Stripe. */
function creditCurrencyProblem(value: unknown): string {
  const given = givenValue(value);
  const examples = 'such as usd, eur, gbp or jpy (https://docs.stripe.com/currencies)';
  if (typeof value === 'string' && STRIPE_CURRENCIES.includes(value.toLowerCase())) return `${given} must be written in lowercase, as ${value.toLowerCase()}`;
  return `${given} is not an ISO 4217 currency code Stripe supports: give one in lowercase, ${examples}`;
}

/** The smallest INTERLOCK_REDIS_MAXMEMORY taken: 1mb, under which Redis warns that the limit is likely a mistake. */
export const MIN_REDIS_MAXMEMORY_BYTES = 1024 * 1024;

/**
 * The largest INTERLOCK_REDIS_MAXMEMORY taken, in bytes (8388607gb, about 8 PiB): the largest whole number read
 * exactly here. Redis reads a size past 2^64 bytes as no limit at all (99999999999999999999, 17179869184gb) or wraps
 * it round to a small one (17179869185gb is 1gb), so a size too large for the machine is refused, as 0 is.
 */
export const MAX_REDIS_MAXMEMORY_BYTES = Number.MAX_SAFE_INTEGER;

/** Bytes of a size as Redis reads it (memtoull): k, m, g are powers of 1000, kb, mb, gb powers of 1024, b or none bytes. */
export function redisSizeBytes(size: string): number {
  const match = /^([0-9]+)([kmg]b?|b)?$/i.exec(size);
  if (match === null) return Number.NaN;
  const unit = (match[2] ?? 'b').toLowerCase();
  const factors: Readonly<Record<string, number>> = { b: 1, k: 1e3, kb: 1024, m: 1e6, mb: 1024 ** 2, g: 1e9, gb: 1024 ** 3 };
  return Number(match[1]) * (factors[unit] ?? Number.NaN);
}

/**
 * A flag's value: on for 1, true or yes, off for 0, false or no, in any case and without the whitespace around it, as
 * bin/compiled.js's codeCacheOn reads INTERLOCK_CODE_CACHE before this loads (and the Stripe client INTERLOCK_ALLOW_LIVE):
 * one variable has one reading (tests/config-flag-spellings.test.ts keeps the two in step). Null for any other value.
 */
export function flagValue(value: string): boolean | null {
  const spelled = value.trim().toLowerCase();
  if (['1', 'true', 'yes'].includes(spelled)) return true;
  if (['0', 'false', 'no'].includes(spelled)) return false;
  return null;
}

const flag = z
  .string()
  .refine((value) => flagValue(value) !== null, { error: (issue) => `${givenValue(issue.input)} is not a flag: give 1, true or yes to turn it on, 0, false or no to turn it off` })
  .transform((value) => flagValue(value) === true);
/**
 * The longest delay a Node.js timer takes (2^31 - 1 ms, about 24.8 days): a longer one fires after 1 ms instead, so
 * a setting meant as "hardly ever" would run its timer in a loop. Every setting a timer waits for is held to it.
 */
export const MAX_TIMER_MS = 2_147_483_647;
const overTimer = `must be at most ${MAX_TIMER_MS} ms (about 24.8 days, the longest a timer waits)`;
const ms = wholeNumberSetting(1, MAX_TIMER_MS, 'must be at least 1', overTimer);
/** A duration only compared with clocks, never waited for: any safe whole number. */
const span = wholeNumberSetting(1, Number.MAX_SAFE_INTEGER);

/** INTERLOCK_METRICS_HOSTS as a list: comma-separated, spaces around each name and empty entries dropped. */
function metricsHostsOf(value: string): string[] {
  return value.split(',').map((name) => name.trim()).filter((name) => name !== '');
}

/** Why INTERLOCK_METRICS_HOSTS is refused, quoting the first entry that is no host name (`worker:9464`, a URL), or null. */
function metricsHostsProblem(value: string): string | null {
  const wrong = metricsHostsOf(value).find((name) => !/^[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$/.test(name));
  return wrong === undefined ? null : `${quotedSetting(wrong, 'an entry')} is not a host name: give names only, comma-separated, without a port or scheme (e.g. worker,metrics.internal)`;
}

const schema = z.object({
  REDIS_URL: z
    .string()
    .url({ error: (issue) => `must be a URL such as redis://127.0.0.1:6379${givenRedisUrl(issue.input)}`, abort: true })
    .regex(/^rediss?:\/\//, { error: (issue) => `must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379${givenRedisUrl(issue.input)}` })
    .default('redis://127.0.0.1:6379'),
  INTERLOCK_REDIS_CLUSTER: flag.default(false),
  INTERLOCK_KEY_PREFIX: z.string().regex(/^[A-Za-z0-9_:.-]+$/, { error: (issue) => `${givenValue(issue.input)} holds other characters than letters, digits and _ : . -` }).default('interlock'),
  // Spaces and line breaks around the path (an env file's `VAR=/srv/interlock `) are not part of it: kept, they would
  // name another directory, and the service would start there on a new signing key, new tokens and an empty Redis.
  INTERLOCK_DATA_DIR: z.string().trim().default(DEFAULT_DATA_DIR),
  INTERLOCK_SIGNING_KEY_FILE: z.string().trim().optional(),
  INTERLOCK_RETIRED_PUBLIC_KEYS_FILE: z.string().trim().optional(),
  INTERLOCK_WORKER_ID: z.string().regex(/^[A-Za-z0-9_:.@-]+$/, { error: (issue) => `${givenValue(issue.input)} holds other characters than letters, digits and _ : . @ -` }).optional(),
  INTERLOCK_UNSAFE_DURABILITY: flag.default(false),
  INTERLOCK_SEND_WATCHDOG: flag.default(true),
  INTERLOCK_CLAIM_TTL_MS: ms.default(45_000),
  INTERLOCK_SETTLE_MARGIN_MS: ms.default(10_000),
  INTERLOCK_DEDUP_MARGIN_MS: span.default(60 * 60 * 1000),
  INTERLOCK_SEND_TIMEOUT_MS: ms.default(30_000),
  INTERLOCK_HEARTBEAT_MS: ms.default(1_000),
  INTERLOCK_HEARTBEAT_TTL_MS: ms.default(4_000),
  INTERLOCK_DURABILITY_CHECK_MS: ms.default(5_000),
  INTERLOCK_SIGNING_THREAD: flag.default(false),
  INTERLOCK_OTEL: flag.default(false),
  INTERLOCK_REDIS_MIN_REPLICAS: wholeNumberSetting(0, 16).default(0),
  INTERLOCK_REDIS_WAIT_MS: ms.default(1_000),
  // A Redis that is merely busy (an fsync, a slow script) must not fail every command: at least 100 ms.
  INTERLOCK_REDIS_COMMAND_TIMEOUT_MS: wholeNumberSetting(100, MAX_TIMER_MS, 'must be at least 100 ms: shorter would fail commands of a Redis that is only busy', overTimer).default(5_000),
  INTERLOCK_REDIS_MAXMEMORY: z
    .string()
    .regex(/^[1-9][0-9]*(?:[kmgKMG][bB]?|[bB])?$/, { error: (issue) => `${givenValue(issue.input)} must be a size Redis reads, such as 1gb, 512mb or 1073741824 (0, no limit, would let Redis grow until it is killed)`, abort: true })
    .refine((value) => redisSizeBytes(value) >= MIN_REDIS_MAXMEMORY_BYTES, { error: (issue) => `${givenValue(issue.input)} is ${redisSizeBytes(String(issue.input))} bytes, less than 1mb (Redis itself warns below it, and the journal fills it at once): give a size in b, kb, mb or gb (k, m, g: thousands), such as 1gb or 512mb` })
    .refine((value) => redisSizeBytes(value) <= MAX_REDIS_MAXMEMORY_BYTES, { error: (issue) => `${givenValue(issue.input)} is more than the largest size taken, 8388607gb (${MAX_REDIS_MAXMEMORY_BYTES} bytes), far past any machine's memory: Redis reads a size past 2^64 bytes as no limit at all, or wraps it round to a small one. Give the memory Redis may use, such as 1gb or 512mb` })
    .default(DEFAULT_REDIS_MAXMEMORY),
  INTERLOCK_LOG_LEVEL: z.enum(LOG_LEVELS, { error: (issue) => `${givenValue(issue.input)} is not a log level: give one of ${LOG_LEVELS.join(', ')}` }).default('info'),
  // Read by bin/interlock.js before any of this loads (bin/compiled.js); here so a bad value is named and the
  // variable is known.
  INTERLOCK_CODE_CACHE: flag.default(true),
  // Both read as the Stripe client reads them (src/stripe/settings.ts), after the schema: see loadConfig.
  STRIPE_SECRET_KEY: z.string().optional(),
  STRIPE_API_BASE: z.string().optional(),
  // Spaces around the secrets (a line break after a pasted one, `whsec_a, whsec_b`) are not part of them.
  STRIPE_WEBHOOK_SECRET: z
    .string()
    .transform((value) => value.split(',').map((secret) => secret.trim()).join(','))
    .pipe(z.string().regex(/^whsec_[A-Za-z0-9+/=]+(,whsec_[A-Za-z0-9+/=]+)*$/, { error: (issue) => `must be one or more whsec_… secrets, comma-separated${givenSecrets(issue.input)}` }))
    .optional(),
  INTERLOCK_ALLOW_LIVE: flag.default(false),
  INTERLOCK_CREDIT_CURRENCY: z.string().refine((value) => STRIPE_CURRENCIES.includes(value), { error: (issue) => creditCurrencyProblem(issue.input) }).default('usd'),
  INTERLOCK_CONCURRENCY: wholeNumberSetting(1, 1_000).default(16),
  INTERLOCK_STRIPE_RATE: wholeNumberSetting(1, 10_000).optional(),
  INTERLOCK_CRASH_AT: z.enum(['before_send', 'after_send'], { error: (issue) => `${givenValue(issue.input)} is not a crash point: give before_send or after_send` }).optional(),
  INTERLOCK_CRASH_BATCH: wholeNumberSetting(1, 1_000).default(1),
  INTERLOCK_RATE_LIMIT_BACKOFF_MS: wholeNumberSetting(1, 600_000).default(1_000),
  INTERLOCK_RECOVERY_INTERVAL_MS: ms.default(60_000),
  INTERLOCK_UNANSWERED_ALERT_MS: span.default(15 * 60 * 1000),
  INTERLOCK_RECONCILE_INTERVAL_MS: ms.default(15 * 60 * 1000),
  INTERLOCK_RECONCILE_HORIZON_MS: span.default(3 * 24 * 60 * 60 * 1000),
  INTERLOCK_FACTS_LOCK_MS: ms.default(30_000),
  INTERLOCK_RETRY_MAX_DELAY_MS: wholeNumberSetting(1, 3_600_000).default(5 * 60_000),
  INTERLOCK_RETRY_FOR_MS: wholeNumberSetting(1, 7 * 24 * 3_600_000).default(6 * 3_600_000),
  INTERLOCK_HOST: z.string().min(1).default('127.0.0.1'),
  INTERLOCK_PORT: wholeNumberSetting(0, 65_535).default(3000),
  INTERLOCK_API_TOKENS: z.string().optional(),
  // Express's `trust proxy`: which hops may say, in X-Forwarded-Proto and -For, that a request came over HTTPS and from
  // whom. Never "true" (anyone could then say so): the names Express knows, addresses or ranges, or a hop count.
  INTERLOCK_TRUST_PROXY: z
    .string()
    .trim()
    .regex(/^(?:[1-9]|loopback|linklocal|uniquelocal|[0-9A-Fa-f:.]+(?:\/\d{1,3})?)(?:\s*,\s*(?:loopback|linklocal|uniquelocal|[0-9A-Fa-f:.]+(?:\/\d{1,3})?))*$/, {
      error: (issue) => `must be loopback, linklocal, uniquelocal, addresses or ranges (comma-separated), or a number of hops from 1 to 9${givenProxies(issue.input)}`,
    })
    .optional(),
  INTERLOCK_METRICS_ADDR: z
    .string()
    .regex(/^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, { error: (issue) => `${givenValue(issue.input)} must be host:port (e.g. 127.0.0.1:9464)`, abort: true })
    .refine((value) => Number(value.slice(value.lastIndexOf(':') + 1)) <= 65_535, { error: (issue) => `${givenValue(issue.input)} must name a port from 0 to 65535` })
    .optional(),
  // Host names, without a port, a scraper may address the metrics listener by (a compose service name): it answers
  // any other name 421, so a web page cannot read it by rebinding its own name to the listener's address.
  INTERLOCK_METRICS_HOSTS: z
    .string()
    .refine((value) => metricsHostsProblem(value) === null, { error: (issue) => metricsHostsProblem(String(issue.input)) ?? '' })
    .transform(metricsHostsOf)
    .optional(),
});

/** Every variable loadConfig reads, each a row of the README's configuration table. */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(schema.shape);

/** The support API's limits, read by webhooks/api/limits.ts when the api role starts (its schema has these keys). */
export const API_LIMIT_VARIABLES = ['INTERLOCK_API_RATE_LIMIT', 'INTERLOCK_API_RATE_BURST', 'INTERLOCK_API_BODY_LIMIT', 'INTERLOCK_API_FACT_TIMEOUT_MS'] as const;

/**
 * Every INTERLOCK_* variable the service reads: its configuration, the decider's (src/decider/config.ts) and the
 * support API's limits. Any other INTERLOCK_* variable is read by nothing, so it is a misspelling or a leftover.
 */
export const INTERLOCK_SETTINGS: readonly string[] = [...CONFIG_VARIABLES, ...Object.keys(deciderEnvSchema.shape), ...API_LIMIT_VARIABLES].filter((name) => name.startsWith('INTERLOCK_'));

/** An INTERLOCK_* variable that is set and is no setting, with the setting whose name is nearest to it. */
export type UnknownSetting = { variable: string; nearest: string };

/** Edits (insert, delete, replace a character) from `a` to `b`. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/**
 * The INTERLOCK_* variables set (not empty) in `env` that no part of the service reads, in name order: a misspelled
 * setting (INTERLOCK_SIGNING_KEY for INTERLOCK_SIGNING_KEY_FILE) is otherwise ignored without a word, and the service
 * runs on the default the operator meant to replace. They are warned about, not refused: a deployment may set
 * variables of its own under the prefix (its scripts', its tests'), and refusing them would stop a service that
 * runs as configured.
 */
export function unknownSettings(env: NodeJS.ProcessEnv): UnknownSetting[] {
  const known = new Set(INTERLOCK_SETTINGS);
  return Object.keys(env)
    .filter((variable) => variable.startsWith('INTERLOCK_') && !known.has(variable) && (env[variable] ?? '') !== '')
    .sort()
    .map((variable) => {
      // The fewest edits; of equals, the one that begins with the variable (a suffix left out, as _FILE was), then by name.
      // Letters are compared in one case: INTERLOCK_key_prefix is INTERLOCK_KEY_PREFIX typed in the wrong case.
      const typed = variable.toUpperCase();
      const ranked = INTERLOCK_SETTINGS.map((name) => ({ name, edits: editDistance(typed, name), extends: name.startsWith(typed) ? 0 : 1 })).sort((a, b) => a.edits - b.edits || a.extends - b.extends || a.name.localeCompare(b.name));
      return { variable, nearest: ranked[0]?.name ?? '' };
    });
}

/** What a process tells the operator about one variable unknownSettings found. */
export function unknownSettingSentence(unknown: UnknownSetting): string {
  return `${unknown.variable} is set but is not a setting of this service, so it changes nothing (the nearest setting is ${unknown.nearest}). Correct its name, or remove it; the README's configuration table lists every setting.`;
}

export type Config = {
  redisUrl: string;
  redisCluster: boolean;
  keyPrefix: string;
  dataDir: string;
  signingKeyFile: string | null;
  /**
   * A PEM file of the public halves of keys this service signed with before a rotation: receipts they signed still
   * verify (`effect show`, the API, the page) and GET /v1/keys lists them as retired. Null: the current key alone.
   */
  retiredPublicKeysFile: string | null;
  workerId: string | null;
  unsafeDurability: boolean;
  sendWatchdog: boolean;
  claimTtlMs: number;
  settleMarginMs: number;
  dedupMarginMs: number;
  sendTimeoutMs: number;
  heartbeatMs: number;
  heartbeatTtlMs: number;
  durabilityCheckMs: number;
  /** Sign entries on a worker thread (the main thread keeps Redis and the target busy meanwhile). */
  signingThread: boolean;
  /** OpenTelemetry spans for every BullMQ queue and worker (bullmq-otel), to the tracer provider the process registers. */
  otel: boolean;
  /** Replicas that must acknowledge a DISPATCHED (Redis WAIT) before its send; 0 trusts the master's AOF alone. */
  redisMinReplicas: number;
  redisWaitMs: number;
  /**
   * How long the service's Redis client waits for any one answer before the command fails as an outage (a Redis that
   * hangs while its connections stay open). Queue connections wait out outages by design; the API bounds them itself.
   */
  redisCommandTimeoutMs: number;
  /**
   * The `maxmemory` of the private Redis `serve` starts when REDIS_URL is unset (Redis's size syntax: 1gb, 512mb):
   * under noeviction a full Redis refuses writes with OOM, an outage the service waits out, instead of growing until
   * it is killed.
   */
  redisMaxmemory: string;
  logLevel: (typeof LOG_LEVELS)[number];
  /** Stripe: a test key (or a live one with allowLive); null runs against the sandbox. */
  stripeSecretKey: string | null;
  /** Where the Stripe SDK sends requests, e.g. the sandbox's http://127.0.0.1:12111; null for Stripe itself. */
  stripeApiBase: string | null;
  /** Signing secrets of the webhook endpoint (several during a rotation). */
  stripeWebhookSecrets: string[];
  allowLive: boolean;
  /** The currency customer credits are given in (Stripe requires one; a customer's balance has one currency). */
  creditCurrency: string;
  /** Effects one worker process sends at once. */
  concurrency: number;
  /** At most this many effect jobs per second across the workers of the queue; null for no limit. */
  stripeRatePerSecond: number | null;
  /** How long the workers pause the effects queue after Stripe rate-limited a call and named no Retry-After. */
  rateLimitBackoffMs: number;
  /** Kill the worker at this point of its next send (the crash matrix and scenarios; test keys and sandbox only). */
  crashAt: 'before_send' | 'after_send' | null;
  /** How many sends reach the crash point together before the kill (a worker dying with several in flight). */
  crashBatch: number;
  recoveryIntervalMs: number;
  /** How long an open effect's sends may go without a definite answer from Stripe before a send_unanswered alert says so. */
  unansweredAlertMs: number;
  /** How often the facts role re-reads effects recently settled after a send from Stripe (missed webhooks). */
  reconcileIntervalMs: number;
  /** How far back each reconciliation pass looks (effects settled after a send within it are re-read). */
  reconcileHorizonMs: number;
  /** How long a facts job stays with a worker that stopped renewing its lock (a killed process) before another takes it. */
  factsLockMs: number;
  /**
   * An effect not judged yet because Stripe or Redis failed (a premise read, durability): its job is tried again,
   * the wait doubling from 1 s up to `retryMaxDelayMs`, for as long as the failures last up to `retryForMs`; then the
   * job fails and a not_judged alert says so.
   */
  retryMaxDelayMs: number;
  retryForMs: number;
  host: string;
  port: number;
  /** name:role:token, comma-separated, or a file holding such lines; null generates tokens into the data dir. */
  apiTokens: string | null;
  /**
   * A separate listener for GET /metrics, /healthz and /readyz without a token (INTERLOCK_METRICS_ADDR, host:port), for processes with no
   * api role (a worker) and for scrapers that hold no token; protected by the address it binds. Null: none.
   */
  metricsAddr: { host: string; port: number } | null;
  /**
   * The names, besides IP addresses and localhost, a request may address the metrics listener by
   * (INTERLOCK_METRICS_HOSTS): any other Host is answered 421, against DNS rebinding. Empty: none.
   */
  metricsHosts: readonly string[];
  /**
   * Which proxies in front of the api role are trusted to say a request came over HTTPS (INTERLOCK_TRUST_PROXY, Express's
   * `trust proxy`): a number of hops, or the names and addresses of the proxies. Null: none, and no request is taken
   * as HTTPS (the service itself listens on plain HTTP), so the page's sign-in cookie is not marked Secure.
   */
  trustProxy: number | string | null;
};

/**
 * How long a stop of `serve` may run past the send deadline before the process exits anyway: sends in progress end
 * within that deadline, and a close still waiting after the margin waits on something that does not answer (a Redis
 * that hangs holds every close that needs it).
 */
export const STOP_MARGIN_MS = 15_000;

export class ConfigError extends InterlockError {
  constructor(message: string) {
    super('invalid_config', message);
    this.name = 'ConfigError';
  }
}

// Where each timing setting comes from, so a broken rule names what the operator has to change.
const TIMING_SOURCES: Record<TimingSetting, string> = {
  heartbeatMs: 'INTERLOCK_HEARTBEAT_MS',
  heartbeatTtlMs: 'INTERLOCK_HEARTBEAT_TTL_MS',
  claimTtlMs: 'INTERLOCK_CLAIM_TTL_MS',
  sendTimeoutMs: 'INTERLOCK_SEND_TIMEOUT_MS',
  settleMarginMs: 'INTERLOCK_SETTLE_MARGIN_MS',
  dedupMarginMs: 'INTERLOCK_DEDUP_MARGIN_MS',
  dedupWindowMs: "Stripe's 24 h idempotency-key window",
  durabilityCheckMs: 'INTERLOCK_DURABILITY_CHECK_MS',
};

/** Throws a ConfigError naming every timing rule the configuration breaks and the variables involved. */
export function assertConsistentTiming(config: Config): void {
  const problems = timingProblems({ ...config, dedupWindowMs: STRIPE_DEDUP_WINDOW_MS });
  if (problems.length === 0) return;
  const detail = problems.map((problem) => `${problem.rule} (${problem.settings.map((setting) => TIMING_SOURCES[setting]).join(', ')}): ${problem.message}`).join('; ');
  throw new ConfigError(`The timing settings are inconsistent: ${detail}. Change the variables named; the README's configuration table gives the defaults.`);
}

/**
 * What is wrong with a REDIS_URL the schema took as a URL, or null: it carries no query or fragment (ioredis reads
 * `?key=value` as client options: `?db=9` would select a database no check here sees, `?keyPrefix=` would write every
 * key under another prefix), its path names a database by number or nothing (ioredis reads "/abc" as SELECT NaN, and
 * "/1x" as database 1), and its user and password decode (a bare "%" in a password is refused by the decoder only
 * when the client connects). The query is named by kind only: it may hold a password, and a "#" or "?" written raw in
 * a password starts one.
 */
export function redisUrlProblem(text: string): string | null {
  const url = new URL(text);
  if (url.search !== '' || url.hash !== '') {
    // An "@" after the "?" or "#" is the rest of a password holding one raw, whose start the URL read as its host and
    // port (redis://default:12#34@cache): then nothing of it is quoted.
    const given = `${url.search}${url.hash}`.includes('@') ? '' : ` (given: ${shownUrl(text)}, its query and fragment not shown)`;
    return `REDIS_URL must not carry ?options or a #fragment (ioredis would read them as client options, which the service does not check): name the database as /N, such as redis://127.0.0.1:6379/2, and write a "?" or "#" in the password as %3F or %23${given}`;
  }
  // A path holding an "@" is the rest of a password with a "/" in it (the URL ended its port at that "/"): not quoted.
  if (url.pathname.includes('@')) return 'REDIS_URL has an "@" after its host: write a "/" in the password as %2F (and "@" as %40), and name the database as /N, such as redis://127.0.0.1:6379/2';
  if (!/^\/?(?:[0-9]{1,5})?$/.test(url.pathname)) return `REDIS_URL's path ${JSON.stringify(redactSecrets(url.pathname))} must be a database number such as /0, or nothing`;
  for (const [part, value] of [['user', url.username], ['password', url.password]] as const) {
    try {
      decodeURIComponent(value);
    } catch {
      return `REDIS_URL's ${part} is not valid percent-encoding: write a "%" in it as %25 (and "@", ":" or "/" as %40, %3A, %2F) (given: ${shownUrl(text)})`;
    }
  }
  return null;
}

/** The database REDIS_URL names (0 when none). */
export function redisDatabaseOf(text: string): number {
  const path = new URL(text).pathname.replace(/^\//, '');
  return path === '' ? 0 : Number(path);
}

/** The widest range a proxy's addresses are taken to need: an IPv4 /8 (10.0.0.0/8), an IPv6 /7 (fc00::/7, unique local). */
const WIDEST_PROXY_RANGE = { 4: 8, 6: 7 } as const;

/** The IPv4-mapped IPv6 addresses (::ffff:a.b.c.d): a range of them is judged as the IPv4 range it maps. */
const IPV4_MAPPED = new BlockList();
IPV4_MAPPED.addSubnet('::ffff:0:0', 96, 'ipv6');

/**
 * The ranges the keywords name, as proxy-addr holds them (loopback, linklocal, uniquelocal): loopback, link-local and
 * private addresses, none of them a client of the internet at large. Listed or not, they are left out of the count
 * of the addresses a value trusts (trustedCountProblem), so `uniquelocal` (more than a /8 of IPv4) and the same ranges
 * written out (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16) stay taken as they were.
 */
const KEYWORD_RANGES = {
  4: ['127.0.0.0/8', '169.254.0.0/16', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'],
  6: ['::1/128', 'fe80::/10', 'fc00::/7'],
} as const;

/** An address isIP takes as a number: 32 bits for IPv4, 128 for IPv6 (its zone, such as %eth0, dropped). */
function addressBits(address: string, family: 4 | 6): bigint {
  if (family === 4) return address.split('.').reduce((bits, octet) => (bits << 8n) | BigInt(octet), 0n);
  let text = address.replace(/%.*$/, '');
  // The last 32 bits written as an IPv4 address (::ffff:10.0.0.1): as two groups.
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted !== null) {
    const low = addressBits(dotted[2] ?? '', 4);
    text = `${dotted[1] ?? ''}${(low >> 16n).toString(16)}:${(low & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const groupsOf = (part: string) => (part === '' ? [] : part.split(':'));
  const left = groupsOf(head);
  const right = tail === undefined ? [] : groupsOf(tail);
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((bits, group) => (bits << 16n) | BigInt(`0x${group}`), 0n);
}

/** The addresses a range holds, first to last, in a family of `width` bits (32 or 128). */
type AddressRange = { first: bigint; last: bigint };

function rangeOf(bits: bigint, prefix: number, width: number): AddressRange {
  const size = 1n << BigInt(width - prefix);
  const first = bits - (bits % size);
  return { first, last: first + size - 1n };
}

/** How many addresses the ranges hold together, each counted once however many ranges hold it. */
function unionSize(ranges: readonly AddressRange[]): bigint {
  let total = 0n;
  let end = -1n;
  for (const { first, last } of [...ranges].sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0))) {
    if (last <= end) continue;
    total += last - (first > end ? first : end + 1n) + 1n;
    end = last;
  }
  return total;
}

/**
 * What is wrong with the ranges a value lists together, or null: more addresses in one family than the widest range
 * a proxy needs (WIDEST_PROXY_RANGE), counted once each (10.0.0.0/8 listed twice, or with 10.1.0.0/16, is one /8)
 * and without the loopback, link-local and private ones (KEYWORD_RANGES). Judged part by part, 256 /8s would pass,
 * and trust every IPv4 client as `true` would. IPv4-mapped ranges are counted as the IPv4 ranges they map.
 */
function trustedCountProblem(listed: { 4: AddressRange[]; 6: AddressRange[] }): string | null {
  for (const family of [4, 6] as const) {
    const width = family === 4 ? 32 : 128;
    const keywords = KEYWORD_RANGES[family].map((range) => {
      const [address = '', bits = ''] = range.split('/');
      return rangeOf(addressBits(address, family), Number(bits), width);
    });
    const trusted = unionSize([...listed[family], ...keywords]) - unionSize(keywords);
    const widest = WIDEST_PROXY_RANGE[family];
    const unit = 1n << BigInt(width - widest);
    if (trusted <= unit) continue;
    // In hundredths of a /8 (/7), rounded up: one address over a /8 reads as more than one.
    const units = Number((trusted * 100n + unit - 1n) / unit) / 100;
    return `the ranges listed hold ${trusted.toString()} IPv${family} addresses together (${units} /${widest}s), loopback, link-local and private ones not counted: more than one /${widest} (${unit.toString()}), the most a proxy's ranges may hold, so narrow ranges that add up to the internet at large would let its clients choose their own address and claim HTTPS in X-Forwarded-For and -Proto, as with "true"; list only the proxies' own addresses or ranges, or give a hop count`;
  }
  return null;
}

/**
 * proxy-addr's compile, which Express calls on `trust proxy` when the app is built: the copy Express itself loads
 * (resolved from Express's folder), required only when INTERLOCK_TRUST_PROXY is set, as Express is loaded only by
 * the commands that serve.
 */
function proxyAddrCompile(): (trust: string[]) => unknown {
  const fromExpress = createRequire(createRequire(import.meta.url).resolve('express'));
  return (fromExpress('proxy-addr') as { compile: (trust: string[]) => unknown }).compile;
}

/** The most of INTERLOCK_TRUST_PROXY a refusal quotes: a list of 253 ranges is not repeated whole. */
const SHOWN_PROXIES_LENGTH = 100;

/**
 * INTERLOCK_TRUST_PROXY as its refusal quotes it: hop counts, keywords, addresses and ranges as written (the first
 * SHOWN_PROXIES_LENGTH characters of a long list); anything else (a token put there by mistake) as quotedSetting shows it.
 */
function givenProxies(value: unknown): string {
  if (typeof value !== 'string') return givenSetting(value);
  const plain = value.split(',').every((item) => {
    const part = item.trim();
    return ['loopback', 'linklocal', 'uniquelocal'].includes(part) || /^[0-9]{1,3}$/.test(part) || (/^[0-9A-Fa-f:.]+(?:\/[0-9]*)?$/.test(part) && /[.:]/.test(part));
  });
  if (!plain) return givenSetting(value);
  return value.length <= SHOWN_PROXIES_LENGTH ? ` (given: ${JSON.stringify(value)})` : ` (given: ${JSON.stringify(value.slice(0, SHOWN_PROXIES_LENGTH))}…, ${value.length} characters)`;
}

/**
 * What is wrong with INTERLOCK_TRUST_PROXY, or null. Express reads a bare number in a list, or a word it does not know,
 * as an address ("10" as 0.0.0.10), and fails on a malformed one only when the app is built (after the workers and
 * recovery have started): so each part is checked here, and the whole is then handed to proxy-addr, the module
 * Express builds it with, so that nothing it would refuse passes. A hop count (1 to 9) stands alone. A range wider
 * than an IPv4 /8 or an IPv6 /7 is refused: it holds addresses of the internet at large, and a pair of them
 * (0.0.0.0/1 and 128.0.0.0/1) is `true` by another name, every client then saying where it is and that it came over
 * HTTPS.
 */
function trustProxyProblem(value: string): string | null {
  if (/^[0-9]+$/.test(value)) return /^[1-9]$/.test(value) ? null : `a number of hops must be from 1 to 9${givenProxies(value)}`;
  const parts = value.split(',').map((item) => item.trim());
  const listed: { 4: AddressRange[]; 6: AddressRange[] } = { 4: [], 6: [] };
  for (const [index, part] of parts.entries()) {
    if (['loopback', 'linklocal', 'uniquelocal'].includes(part)) continue;
    const [address = '', bits, extra] = part.split('/');
    const family = isIP(address);
    const width = family === 4 ? 32 : 128;
    if (family === 0 || extra !== undefined || (bits !== undefined && (!/^[0-9]{1,3}$/.test(bits) || Number(bits) > width))) {
      // Shown as a setting a secret may land in by mistake is shown: an address or range as written, a token by its length.
      const shown = /^[0-9A-Fa-f:.]+(?:\/[0-9]*)?$/.test(part) && /[.:]/.test(part) ? part : shownSetting(part);
      return `part ${index + 1} (${shown}) is not loopback, linklocal, uniquelocal, an IP address or a range such as 10.0.0.0/8 (a hop count stands alone)`;
    }
    const prefix = bits === undefined ? width : Number(bits);
    const mapped = family === 6 && IPV4_MAPPED.check(address, 'ipv6');
    // An IPv4-mapped range is the IPv4 range it maps; one shorter than /96 maps all of IPv4 (and native IPv6 besides).
    const judgedPrefix = mapped ? Math.max(0, prefix - 96) : prefix;
    const widest = WIDEST_PROXY_RANGE[mapped || family === 4 ? 4 : 6];
    if (judgedPrefix < widest) {
      const judged = mapped ? `, an IPv4-mapped range and so judged as the IPv4 range /${judgedPrefix}` : '';
      return `part ${index + 1} (${part}${judged}) is too wide to be a proxy's: a range shorter than /${WIDEST_PROXY_RANGE[4]} (IPv4) or /${WIDEST_PROXY_RANGE[6]} (IPv6) holds the internet at large, whose clients could then choose their own address and claim HTTPS in X-Forwarded-For and -Proto, as with "true"; name the proxies' own addresses or ranges, or a hop count`;
    }
    const number = addressBits(address, family === 4 ? 4 : 6);
    if (mapped) listed[4].push(rangeOf(number & 0xffffffffn, judgedPrefix, 32));
    else if (family === 4) listed[4].push(rangeOf(number, prefix, 32));
    else listed[6].push(rangeOf(number, prefix, 128));
  }
  const countProblem = trustedCountProblem(listed);
  if (countProblem !== null) return `${countProblem}${givenProxies(value)}`;
  try {
    // As Express hands it over: the parts, split on commas and trimmed.
    proxyAddrCompile()(parts);
  } catch (error) {
    return `Express cannot be built with it (${error instanceof Error ? error.message : String(error)}); give loopback, linklocal, uniquelocal, IP addresses or ranges such as 10.0.0.0/8, or a hop count${givenProxies(value)}`;
  }
  return null;
}

/**
 * What a listener on `host` takes a port on, as keys compared for a clash: `v4:<address>` and `v6:<address>` (an IPv6
 * address in its shortest form, an IPv4 one mapped into IPv6 as itself), `v4:*` for 0.0.0.0, both wildcards for ::
 * (a dual-stack socket), both loopbacks for `localhost` (either may be the one it resolves to), and any other name as
 * written (without brackets, case or a trailing dot).
 */
function boundKeys(host: string): string[] {
  const bare = host.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
  if (bare === 'localhost') return ['v4:127.0.0.1', 'v6:::1'];
  if (bare === '0.0.0.0') return ['v4:*'];
  if (isIP(bare) === 4) return [`v4:${bare}`];
  if (isIP(bare) !== 6) return [`name:${bare}`];
  let shortest = bare;
  try {
    shortest = new URL(`http://[${bare}]`).hostname.slice(1, -1);
  } catch {
    // A zone id (fe80::1%eth0) is no URL's: compared as written.
  }
  if (shortest === '::') return ['v4:*', 'v6:*'];
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(shortest);
  if (mapped !== null) {
    const [high, low] = [parseInt(mapped[1] ?? '0', 16), parseInt(mapped[2] ?? '0', 16)];
    return [`v4:${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`];
  }
  return [`v6:${shortest}`];
}

/** Whether listeners on two hosts take the same port: one key in common, or a family's wildcard beside an address of it. */
function hostsOverlap(a: readonly string[], b: readonly string[]): boolean {
  return a.some((one) => b.some((other) => one === other || (one.endsWith(':*') && other.startsWith(one.slice(0, 3))) || (other.endsWith(':*') && one.startsWith(other.slice(0, 3)))));
}

/**
 * Refuses a metrics address that is the service's own HTTP address (INTERLOCK_HOST and INTERLOCK_PORT, or `serve
 * --port`), where the metrics listener would hold the port the API needs. Only for a process that listens on it (the
 * api or webhooks role): a worker alone has no HTTP address, and may serve its metrics on any port. Checked on the
 * configuration the service starts with, `--port` included, before anything is opened. On the same port, the hosts
 * overlap when they are one address however written (`localhost` names both loopbacks, 127.0.0.1 and ::1; an IPv4
 * address mapped into IPv6 is that address), or when either is a wildcard of the other's family (0.0.0.0 takes the
 * port on every IPv4 address, :: on every address); 127.0.0.1 and ::1, or 0.0.0.0 and ::1, bind side by side.
 */
export function assertMetricsAddrFree(config: Pick<Config, 'metricsAddr' | 'host' | 'port'>, listens: boolean): void {
  const { metricsAddr, host, port } = config;
  if (!listens || metricsAddr === null || port === 0 || metricsAddr.port !== port) return;
  const [metrics, service] = [boundKeys(metricsAddr.host), boundKeys(host)];
  if (!hostsOverlap(metrics, service)) return;
  const wildcard = [...metrics, ...service].some((key) => key.endsWith(':*'));
  const why = metricsAddr.host === host ? '' : wildcard ? ` (${host}:${port}; a wildcard address takes the port on every address of its family: 0.0.0.0 on IPv4, :: on both)` : ` (${host}:${port}; the same address however written: localhost names both 127.0.0.1 and ::1)`;
  throw new ConfigError(`INTERLOCK_METRICS_ADDR (${metricsAddr.host}:${metricsAddr.port}) is the service's own HTTP address${why} (INTERLOCK_HOST and INTERLOCK_PORT, or serve --port): give the metrics listener another port.`);
}

/** The data directory as loadConfig reads it, without checking any other setting: trimmed, and empty or only whitespace is unset. */
export function dataDirOf(env: NodeJS.ProcessEnv): string {
  const given = (env.INTERLOCK_DATA_DIR ?? '').trim();
  return given === '' ? DEFAULT_DATA_DIR : given;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // Every setting is read without the whitespace around it (an env file's `INTERLOCK_HOST=127.0.0.1 `, a mounted file's
  // last line break): it is never part of a host, a level, a flag or a number. Empty or only whitespace is unset, as
  // the Stripe settings read it.
  const present = Object.fromEntries(Object.entries(env).flatMap(([key, value]) => (key in schema.shape && value !== undefined && value.trim() !== '' ? [[key, value.trim()]] : [])));
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
    throw new ConfigError(`Configuration is invalid (${detail}). See the configuration table in the README.`);
  }
  const c = parsed.data;
  const urlProblem = redisUrlProblem(c.REDIS_URL);
  if (urlProblem !== null) throw new ConfigError(`Configuration is invalid (${urlProblem}). See the configuration table in the README.`);
  const proxyProblem = c.INTERLOCK_TRUST_PROXY === undefined ? null : trustProxyProblem(c.INTERLOCK_TRUST_PROXY);
  if (proxyProblem !== null) throw new ConfigError(`Configuration is invalid (INTERLOCK_TRUST_PROXY: ${proxyProblem}). See the configuration table in the README.`);
  const config: Config = {
    redisUrl: c.REDIS_URL,
    redisCluster: c.INTERLOCK_REDIS_CLUSTER,
    keyPrefix: c.INTERLOCK_KEY_PREFIX,
    dataDir: c.INTERLOCK_DATA_DIR,
    signingKeyFile: c.INTERLOCK_SIGNING_KEY_FILE ?? null,
    retiredPublicKeysFile: c.INTERLOCK_RETIRED_PUBLIC_KEYS_FILE ?? null,
    workerId: c.INTERLOCK_WORKER_ID ?? null,
    unsafeDurability: c.INTERLOCK_UNSAFE_DURABILITY,
    sendWatchdog: c.INTERLOCK_SEND_WATCHDOG,
    claimTtlMs: c.INTERLOCK_CLAIM_TTL_MS,
    settleMarginMs: c.INTERLOCK_SETTLE_MARGIN_MS,
    dedupMarginMs: c.INTERLOCK_DEDUP_MARGIN_MS,
    sendTimeoutMs: c.INTERLOCK_SEND_TIMEOUT_MS,
    heartbeatMs: c.INTERLOCK_HEARTBEAT_MS,
    heartbeatTtlMs: c.INTERLOCK_HEARTBEAT_TTL_MS,
    durabilityCheckMs: c.INTERLOCK_DURABILITY_CHECK_MS,
    signingThread: c.INTERLOCK_SIGNING_THREAD,
    otel: c.INTERLOCK_OTEL,
    redisMinReplicas: c.INTERLOCK_REDIS_MIN_REPLICAS,
    redisWaitMs: c.INTERLOCK_REDIS_WAIT_MS,
    redisCommandTimeoutMs: c.INTERLOCK_REDIS_COMMAND_TIMEOUT_MS,
    redisMaxmemory: c.INTERLOCK_REDIS_MAXMEMORY,
    logLevel: c.INTERLOCK_LOG_LEVEL,
    stripeSecretKey: stripeSettingOf(c.STRIPE_SECRET_KEY),
    stripeApiBase: apiBaseSettingOf(c.STRIPE_API_BASE),
    stripeWebhookSecrets: c.STRIPE_WEBHOOK_SECRET?.split(',') ?? [],
    allowLive: c.INTERLOCK_ALLOW_LIVE,
    creditCurrency: c.INTERLOCK_CREDIT_CURRENCY,
    concurrency: c.INTERLOCK_CONCURRENCY,
    stripeRatePerSecond: c.INTERLOCK_STRIPE_RATE ?? null,
    crashAt: c.INTERLOCK_CRASH_AT ?? null,
    crashBatch: c.INTERLOCK_CRASH_BATCH,
    rateLimitBackoffMs: c.INTERLOCK_RATE_LIMIT_BACKOFF_MS,
    recoveryIntervalMs: c.INTERLOCK_RECOVERY_INTERVAL_MS,
    unansweredAlertMs: c.INTERLOCK_UNANSWERED_ALERT_MS,
    reconcileIntervalMs: c.INTERLOCK_RECONCILE_INTERVAL_MS,
    reconcileHorizonMs: c.INTERLOCK_RECONCILE_HORIZON_MS,
    factsLockMs: c.INTERLOCK_FACTS_LOCK_MS,
    retryMaxDelayMs: c.INTERLOCK_RETRY_MAX_DELAY_MS,
    retryForMs: c.INTERLOCK_RETRY_FOR_MS,
    host: c.INTERLOCK_HOST,
    port: c.INTERLOCK_PORT,
    metricsAddr: c.INTERLOCK_METRICS_ADDR === undefined ? null : { host: c.INTERLOCK_METRICS_ADDR.slice(0, c.INTERLOCK_METRICS_ADDR.lastIndexOf(':')).replace(/^\[|\]$/g, ''), port: Number(c.INTERLOCK_METRICS_ADDR.slice(c.INTERLOCK_METRICS_ADDR.lastIndexOf(':') + 1)) },
    metricsHosts: c.INTERLOCK_METRICS_HOSTS ?? [],
    apiTokens: c.INTERLOCK_API_TOKENS ?? null,
    trustProxy: c.INTERLOCK_TRUST_PROXY === undefined ? null : /^[1-9]$/.test(c.INTERLOCK_TRUST_PROXY) ? Number(c.INTERLOCK_TRUST_PROXY) : c.INTERLOCK_TRUST_PROXY,
  };
  assertConsistentTiming(config);
  if (config.reconcileHorizonMs < config.reconcileIntervalMs) {
    throw new ConfigError(`INTERLOCK_RECONCILE_HORIZON_MS (${config.reconcileHorizonMs}) must be at least INTERLOCK_RECONCILE_INTERVAL_MS (${config.reconcileIntervalMs}): each pass looks back only the horizon, so an effect settled between two passes and more than the horizon before the second would never be re-read. Raise the horizon (several intervals) or shorten the interval.`);
  }
  if (config.redisMinReplicas > 0 && config.redisWaitMs >= config.redisCommandTimeoutMs) {
    throw new ConfigError(`INTERLOCK_REDIS_WAIT_MS (${config.redisWaitMs}) must be shorter than INTERLOCK_REDIS_COMMAND_TIMEOUT_MS (${config.redisCommandTimeoutMs}): the wait for replicas is itself a Redis command, and it would time out before Redis answered it. Lower the first or raise the second.`);
  }
  // The client's own checks and sentences, so a value accepted here is not refused when the client is built.
  if (config.stripeSecretKey !== null) {
    const key = readStripeKey(config.stripeSecretKey, config.allowLive);
    if ('problem' in key) throw new ConfigError(key.problem);
  }
  if (config.stripeApiBase !== null) {
    const base = readApiBase(config.stripeApiBase);
    if ('problem' in base) throw new ConfigError(base.problem);
  }
  const live = liveKeyProblem(config);
  if (live !== null) throw new ConfigError(live);
  return config;
}

/**
 * What a configuration must not do with a live Stripe key, or null: kill its worker on purpose, or send on a Redis that
 * may lose an acknowledged DISPATCHED. Checked by loadConfig and again by openStores, for a configuration built in code.
 */
export function liveKeyProblem(config: Pick<Config, 'crashAt' | 'unsafeDurability' | 'stripeSecretKey'>): string | null {
  if (!config.stripeSecretKey?.includes('_live_')) return null;
  if (config.crashAt !== null) return 'INTERLOCK_CRASH_AT kills the worker on purpose; it is honoured only with a Stripe test key or the sandbox, never with a live key.';
  if (config.unsafeDurability) return 'INTERLOCK_UNSAFE_DURABILITY=1 runs on a Redis that may lose an acknowledged DISPATCHED (and the effect could be sent twice); it is for a test machine and is refused with a live key. Run Redis with AOF, appendfsync always and noeviction, and unset it.';
  return null;
}

/**
 * What a configuration given to openStores lacks or holds of the wrong kind, one sentence per field; empty when it is
 * whole. One built by hand (or from an older version's shape) instead of by loadConfig would otherwise fail later, on
 * whichever field is read first and in its words. The fields and their kinds are those loadConfig gives an empty
 * environment, so they follow the Config type; a field that defaults to null (workerId, stripeSecretKey…) may be null
 * or a value, but not left out.
 */
export function configProblems(value: unknown): string[] {
  if (typeof value !== 'object' || value === null) return [`the configuration (${value === null ? 'null' : typeof value}) must be an object`];
  const given = value as Record<string, unknown>;
  const kindOf = (item: unknown) => (Array.isArray(item) ? 'list' : item === null ? 'null' : typeof item);
  const named: Record<string, string> = { list: 'a list', number: 'a finite number', string: 'a string', boolean: 'true or false' };
  const missing: string[] = [];
  const wrong: string[] = [];
  for (const [field, model] of Object.entries(loadConfig({}))) {
    const item = given[field];
    if (item === undefined) missing.push(field);
    else if (model !== null && (kindOf(item) !== kindOf(model) || (typeof item === 'number' && !Number.isFinite(item)))) {
      wrong.push(`${field} must be ${named[kindOf(model)] ?? kindOf(model)} (it is ${typeof item === 'number' ? String(item) : kindOf(item)})`);
    }
  }
  return [...(missing.length > 0 ? [`missing ${missing.join(', ')}`] : []), ...wrong];
}
