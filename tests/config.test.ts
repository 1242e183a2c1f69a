// loadConfig refuses inconsistent timing at start, with a ConfigError that names each broken rule and the
// environment variables an operator has to change (issue 6, item 15).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { assertMetricsAddrFree, CONFIG_VARIABLES, ConfigError, INTERLOCK_SETTINGS, loadConfig, STRIPE_CURRENCIES, unknownSettings } from '../src/config.js';
import { deciderEnvSchema } from '../src/decider/config.js';
import { loadDeciderConfig } from '../src/decider/decider.js';
import { TRANSIENT_RETRY } from '../queues/effects.js';
import { createStripeClient } from '../src/stripe/client.js';
import { SUPPORTED_CURRENCIES } from '../sandbox/core/money.js';

function refusal(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  it('every variable it (or the decider\'s config) reads is a row of the README\'s configuration table', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Configuration\n'), readme.indexOf('\n## Redis\n'));
    const rows = section.split('\n').filter((line) => line.startsWith('| `'));
    const listed = new Set(rows.flatMap((row) => [...(row.split(' | ')[0] ?? '').matchAll(/`([A-Z_]+)`/g)].map((match) => match[1])));
    expect([...CONFIG_VARIABLES, ...Object.keys(deciderEnvSchema.shape)].filter((variable) => !listed.has(variable))).toEqual([]);
  });

  it('starts from defaults that meet every timing rule, with a durability re-check every 5 s', () => {
    expect(loadConfig({})).toMatchObject({ heartbeatMs: 1_000, heartbeatTtlMs: 4_000, claimTtlMs: 45_000, sendTimeoutMs: 30_000, settleMarginMs: 10_000, dedupMarginMs: 3_600_000, durabilityCheckMs: 5_000 });
    expect(loadConfig({ INTERLOCK_DURABILITY_CHECK_MS: '250' }).durabilityCheckMs).toBe(250);
  });

  it('the retry bounds of an effect not judged yet default to the worker\'s own and are read, within their limits', () => {
    expect(loadConfig({})).toMatchObject({ retryMaxDelayMs: TRANSIENT_RETRY.maxDelayMs, retryForMs: TRANSIENT_RETRY.forMs });
    expect(loadConfig({ INTERLOCK_RETRY_MAX_DELAY_MS: '60000', INTERLOCK_RETRY_FOR_MS: '86400000' })).toMatchObject({ retryMaxDelayMs: 60_000, retryForMs: 86_400_000 });
    expect(refusal({ INTERLOCK_RETRY_MAX_DELAY_MS: '7200000' }).message).toContain('INTERLOCK_RETRY_MAX_DELAY_MS');
    expect(refusal({ INTERLOCK_RETRY_FOR_MS: '0' }).message).toContain('INTERLOCK_RETRY_FOR_MS');
  });

  it('a whole-number setting takes decimal digits only: 0x10, 1e2, +5, 1.0 or 16abc is refused naming the setting, not read as some other number', () => {
    for (const [name, value] of [['INTERLOCK_PORT', '0x10'], ['INTERLOCK_CONCURRENCY', '1e2'], ['INTERLOCK_SEND_TIMEOUT_MS', '+5000'], ['INTERLOCK_CRASH_BATCH', '1.0'], ['INTERLOCK_REDIS_MIN_REPLICAS', '0b1'], ['INTERLOCK_HEARTBEAT_MS', '16abc']]) {
      expect(() => loadConfig({ [name as string]: value }), `${name}=${value}`).toThrow(new RegExp(`${name as string}: must be a whole number written in decimal digits`));
    }
    expect(() => loadDeciderConfig({ INTERLOCK_MODEL_MAX_TOKENS: '1e3' })).toThrow(/INTERLOCK_MODEL_MAX_TOKENS/);
    expect(loadConfig({ INTERLOCK_PORT: ' 8080 ', INTERLOCK_CONCURRENCY: '32' })).toMatchObject({ port: 8080, concurrency: 32 });
    expect(() => loadConfig({ INTERLOCK_PORT: '65536' })).toThrow(/INTERLOCK_PORT: must be at most 65535/);
  });

  it('REDIS_URL must be a redis:// or rediss:// URL, and the refusal names it without repeating its password', () => {
    for (const url of ['foo:bar', 'http://127.0.0.1:6379', '127.0.0.1:6379']) expect(refusal({ REDIS_URL: url }).message).toContain('REDIS_URL');
    expect(refusal({ REDIS_URL: 'http://default:Sup3rS3cret@127.0.0.1:6379' }).message).not.toContain('Sup3rS3cret');
    expect(loadConfig({ REDIS_URL: 'rediss://default:pw@cache.internal:6380/0' }).redisUrl).toBe('rediss://default:pw@cache.internal:6380/0');
  });

  it("REDIS_URL's path names a database by number or nothing, and its password decodes: /abc (SELECT NaN), /1x (read as 1) and a bare % are refused by name", () => {
    for (const url of ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6379/', 'redis://127.0.0.1:6379/3', 'redis://default:50%25off@127.0.0.1:6379']) expect(loadConfig({ REDIS_URL: url }).redisUrl).toBe(url);
    expect(refusal({ REDIS_URL: 'redis://127.0.0.1:6379/abc' }).message).toContain(`REDIS_URL's path "/abc" must be a database number`);
    expect(refusal({ REDIS_URL: 'redis://127.0.0.1:6379/1x' }).message).toContain(`REDIS_URL's path "/1x"`);
    const percent = refusal({ REDIS_URL: 'redis://default:50%off@127.0.0.1:6379' }).message;
    expect(percent).toContain("REDIS_URL's password is not valid percent-encoding");
    expect(percent).not.toContain('50%off');
  });

  it('a setting a timer waits for is at most 2147483647 ms (a longer one would fire every millisecond); durations only compared with clocks may be longer', () => {
    for (const name of ['INTERLOCK_RECOVERY_INTERVAL_MS', 'INTERLOCK_DURABILITY_CHECK_MS', 'INTERLOCK_RECONCILE_INTERVAL_MS', 'INTERLOCK_REDIS_COMMAND_TIMEOUT_MS', 'INTERLOCK_FACTS_LOCK_MS']) {
      expect(refusal({ [name]: '2147483648' }).message, name).toContain(`${name}: must be at most 2147483647 ms (about 24.8 days, the longest a timer waits)`);
    }
    expect(loadConfig({ INTERLOCK_RECOVERY_INTERVAL_MS: '2147483647' }).recoveryIntervalMs).toBe(2_147_483_647);
    expect(loadConfig({ INTERLOCK_RECONCILE_HORIZON_MS: String(60 * 86_400_000) }).reconcileHorizonMs).toBe(60 * 86_400_000);
  });

  it('a reconciliation horizon shorter than the interval between passes is refused, naming both (effects between passes would never be re-read)', () => {
    const message = refusal({ INTERLOCK_RECONCILE_HORIZON_MS: '60000' }).message;
    expect(message).toContain('INTERLOCK_RECONCILE_HORIZON_MS (60000) must be at least INTERLOCK_RECONCILE_INTERVAL_MS (900000)');
    expect(loadConfig({ INTERLOCK_RECONCILE_HORIZON_MS: '60000', INTERLOCK_RECONCILE_INTERVAL_MS: '60000' }).reconcileHorizonMs).toBe(60_000);
  });

  it('heartbeat_ttl_at_least_twice_interval: refuses a heartbeat TTL shorter than twice its refresh interval, naming both variables', () => {
    const error = refusal({ INTERLOCK_HEARTBEAT_MS: '1000', INTERLOCK_HEARTBEAT_TTL_MS: '900' });
    expect(error.code).toBe('invalid_config');
    expect(error.message).toContain('heartbeat_ttl_at_least_twice_interval (INTERLOCK_HEARTBEAT_TTL_MS, INTERLOCK_HEARTBEAT_MS)');
    expect(error.message).toContain('so one late beat does not make a live worker look dead');
    expect(loadConfig({ INTERLOCK_HEARTBEAT_MS: '1000', INTERLOCK_HEARTBEAT_TTL_MS: '2000' }).heartbeatTtlMs).toBe(2_000);
  });

  it('claim_ttl_exceeds_send_timeout: refuses a claim TTL no longer than the send timeout', () => {
    const error = refusal({ INTERLOCK_CLAIM_TTL_MS: '30000', INTERLOCK_SEND_TIMEOUT_MS: '30000' });
    expect(error.message).toContain('claim_ttl_exceeds_send_timeout (INTERLOCK_CLAIM_TTL_MS, INTERLOCK_SEND_TIMEOUT_MS)');
  });

  it('settle_margin_positive: refuses a zero settle margin', () => {
    expect(refusal({ INTERLOCK_SETTLE_MARGIN_MS: '0' }).message).toContain('INTERLOCK_SETTLE_MARGIN_MS');
  });

  it('dedup_margin_exceeds_send_timeout_plus_settle_margin: refuses a dedup margin a resend could outlast', () => {
    const error = refusal({ INTERLOCK_DEDUP_MARGIN_MS: '40000', INTERLOCK_SEND_TIMEOUT_MS: '30000', INTERLOCK_SETTLE_MARGIN_MS: '10000' });
    expect(error.message).toContain('dedup_margin_exceeds_send_timeout_plus_settle_margin (INTERLOCK_DEDUP_MARGIN_MS, INTERLOCK_SEND_TIMEOUT_MS, INTERLOCK_SETTLE_MARGIN_MS)');
  });

  it("dedup_margin_below_dedup_window: refuses a dedup margin as long as Stripe's 24 h key window", () => {
    const error = refusal({ INTERLOCK_DEDUP_MARGIN_MS: String(24 * 60 * 60 * 1000) });
    expect(error.message).toContain("dedup_margin_below_dedup_window (INTERLOCK_DEDUP_MARGIN_MS, Stripe's 24 h idempotency-key window)");
  });

  it('durability_check_interval_positive: refuses a zero or non-numeric durability check interval', () => {
    expect(refusal({ INTERLOCK_DURABILITY_CHECK_MS: '0' }).message).toContain('INTERLOCK_DURABILITY_CHECK_MS');
    expect(refusal({ INTERLOCK_DURABILITY_CHECK_MS: 'soon' }).message).toContain('INTERLOCK_DURABILITY_CHECK_MS');
  });

  it('names every broken rule in one message, so an operator fixes them in one pass', () => {
    const error = refusal({ INTERLOCK_HEARTBEAT_TTL_MS: '1000', INTERLOCK_CLAIM_TTL_MS: '1000', INTERLOCK_DEDUP_MARGIN_MS: '20000' });
    expect(error.message.startsWith('The timing settings are inconsistent: ')).toBe(true);
    for (const rule of ['heartbeat_ttl_at_least_twice_interval', 'claim_ttl_exceeds_send_timeout', 'dedup_margin_exceeds_send_timeout_plus_settle_margin']) expect(error.message).toContain(rule);
    expect(error.message).not.toContain('\n');
  });
});

describe('the Redis command timeout', () => {
  it('bounds every command of the service\'s client at 5 s by default, and refuses a wait for replicas that the bound would cut short', () => {
    expect(loadConfig({}).redisCommandTimeoutMs).toBe(5_000);
    expect(loadConfig({ INTERLOCK_REDIS_COMMAND_TIMEOUT_MS: '2000' }).redisCommandTimeoutMs).toBe(2_000);
    expect(() => loadConfig({ INTERLOCK_REDIS_COMMAND_TIMEOUT_MS: '0' })).toThrow(ConfigError);
    expect(() => loadConfig({ INTERLOCK_REDIS_COMMAND_TIMEOUT_MS: '99' })).toThrow(/INTERLOCK_REDIS_COMMAND_TIMEOUT_MS: must be at least 100 ms/);
    expect(loadConfig({ INTERLOCK_REDIS_COMMAND_TIMEOUT_MS: '100' }).redisCommandTimeoutMs).toBe(100);
    // Without replicas to wait for, the wait setting is not used, so it may be anything.
    expect(loadConfig({ INTERLOCK_REDIS_WAIT_MS: '9000' }).redisWaitMs).toBe(9_000);
    expect(() => loadConfig({ INTERLOCK_REDIS_MIN_REPLICAS: '1', INTERLOCK_REDIS_WAIT_MS: '5000' })).toThrow(/INTERLOCK_REDIS_WAIT_MS \(5000\) must be shorter than INTERLOCK_REDIS_COMMAND_TIMEOUT_MS \(5000\)/);
    expect(loadConfig({ INTERLOCK_REDIS_MIN_REPLICAS: '1', INTERLOCK_REDIS_WAIT_MS: '4999' }).redisWaitMs).toBe(4_999);
  });
});

describe('Stripe keys in the configuration', () => {
  it('refuses a live Stripe key unless INTERLOCK_ALLOW_LIVE=1, saying how to proceed', () => {
    const error = refusal({ STRIPE_SECRET_KEY: 'sk_live_abc123' });
    expect(error.message).toContain('INTERLOCK_ALLOW_LIVE=1');
    expect(error.message).not.toContain('abc123');
    expect(loadConfig({ STRIPE_SECRET_KEY: 'sk_live_abc123', INTERLOCK_ALLOW_LIVE: '1' }).stripeSecretKey).toBe('sk_live_abc123');
    expect(loadConfig({ STRIPE_SECRET_KEY: 'rk_test_abc123' }).allowLive).toBe(false);
  });

  it('refuses what is not a Stripe secret key, and crash injection or the durability opt-out with a live key', () => {
    expect(refusal({ STRIPE_SECRET_KEY: 'pk_test_abc' }).message).toContain('STRIPE_SECRET_KEY');
    expect(refusal({ STRIPE_SECRET_KEY: 'sk_live_abc', INTERLOCK_ALLOW_LIVE: '1', INTERLOCK_CRASH_AT: 'before_send' }).message).toContain('INTERLOCK_CRASH_AT');
    expect(loadConfig({ INTERLOCK_CRASH_AT: 'after_send' }).crashAt).toBe('after_send');
    // "For a test machine, never production": real money on a Redis that may lose an acknowledged DISPATCHED.
    expect(refusal({ STRIPE_SECRET_KEY: 'sk_live_abc', INTERLOCK_ALLOW_LIVE: '1', INTERLOCK_UNSAFE_DURABILITY: '1' }).message).toContain('INTERLOCK_UNSAFE_DURABILITY=1');
    expect(loadConfig({ STRIPE_SECRET_KEY: 'sk_test_abc', INTERLOCK_UNSAFE_DURABILITY: '1' }).unsafeDurability).toBe(true);
  });

  it('takes a key with whitespace around it (a secrets file ends in a newline) as the client does, trimmed, and never repeats a key it refuses', () => {
    for (const given of ['sk_test_51Habc ', 'sk_test_51Habc\n', ' sk_test_51Habc\r\n']) {
      const config = loadConfig({ STRIPE_SECRET_KEY: given });
      expect(config.stripeSecretKey).toBe('sk_test_51Habc');
      expect(createStripeClient({ secretKey: given }).keyHint).toBe(createStripeClient({ secretKey: config.stripeSecretKey ?? '' }).keyHint);
    }
    expect(loadConfig({ STRIPE_SECRET_KEY: 'rk_test_51H_with_underscores' }).stripeSecretKey).toBe('rk_test_51H_with_underscores');
    for (const key of ['sk_test_has spaces', 'pk_test_51Hpublishable', 'sk_prod_123secretvalue', 'sk_live_51Hsecretsecretsecret9876\n']) {
      const error = refusal({ STRIPE_SECRET_KEY: key });
      expect(error.message).toContain('STRIPE_SECRET_KEY');
      expect(error.message).not.toContain(key.trim().slice(8));
    }
  });

  it('refuses a STRIPE_API_BASE the client cannot use, with the client\'s own message', () => {
    const apiBase = 'http://127.0.0.1:12111/v1';
    let clientMessage = '';
    try {
      createStripeClient({ secretKey: 'sk_test_abc', apiBase });
    } catch (error) {
      clientMessage = error instanceof Error ? error.message : String(error);
    }
    expect(clientMessage).toContain('bare origin');
    expect(refusal({ STRIPE_API_BASE: apiBase }).message).toContain(clientMessage);
    expect(refusal({ STRIPE_API_BASE: 'localhost:12111' }).message).toContain('http:// or https://');
  });

  it('keeps STRIPE_API_BASE as a bare origin without its closing slash, so the lines serve prints have one slash before /v1', () => {
    expect(loadConfig({ STRIPE_API_BASE: ' http://127.0.0.1:12111/ ' }).stripeApiBase).toBe('http://127.0.0.1:12111');
    expect(loadConfig({ STRIPE_API_BASE: 'https://api.stripe.com/' }).stripeApiBase).toBe('https://api.stripe.com');
    expect(loadConfig({ STRIPE_API_BASE: 'http://[::1]:12111' }).stripeApiBase).toBe('http://[::1]:12111');
    expect(refusal({ STRIPE_API_BASE: 'http://127.0.0.1:12111//' }).message).toContain('bare origin');
  });

  it('reads several webhook secrets for a rotation', () => {
    expect(loadConfig({ STRIPE_WEBHOOK_SECRET: 'whsec_a1,whsec_b2' }).stripeWebhookSecrets).toEqual(['whsec_a1', 'whsec_b2']);
    expect(refusal({ STRIPE_WEBHOOK_SECRET: 'secret' }).message).toContain('STRIPE_WEBHOOK_SECRET');
    // Spaces and a line break around them (pasted, or written `a, b`) are not part of the secrets.
    expect(loadConfig({ STRIPE_WEBHOOK_SECRET: ' whsec_a1, whsec_b2\n' }).stripeWebhookSecrets).toEqual(['whsec_a1', 'whsec_b2']);
    const inside = refusal({ STRIPE_WEBHOOK_SECRET: 'whsec_a1 b2' });
    expect(inside.message).toContain('STRIPE_WEBHOOK_SECRET');
    expect(inside.message).not.toContain('whsec_a1');
  });
});

describe('the currency of credits', () => {
  it('reads INTERLOCK_CREDIT_CURRENCY as a three-letter lowercase ISO code, usd by default, and refuses anything else by name', () => {
    expect(loadConfig({}).creditCurrency).toBe('usd');
    expect(loadConfig({ INTERLOCK_CREDIT_CURRENCY: 'eur' }).creditCurrency).toBe('eur');
    for (const bad of ['EUR', 'euro', 'e1r', '$']) expect(refusal({ INTERLOCK_CREDIT_CURRENCY: bad }).message).toContain('INTERLOCK_CREDIT_CURRENCY');
  });
});

describe('the metrics listener address', () => {
  it('reads INTERLOCK_METRICS_ADDR as host:port (IPv6 in brackets), and refuses anything else by name', () => {
    expect(loadConfig({}).metricsAddr).toBeNull();
    expect(loadConfig({ INTERLOCK_METRICS_ADDR: '127.0.0.1:9464' }).metricsAddr).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(loadConfig({ INTERLOCK_METRICS_ADDR: '[::1]:9464' }).metricsAddr).toEqual({ host: '::1', port: 9464 });
    for (const bad of ['9464', '127.0.0.1', '127.0.0.1:99999', 'http://x:1']) expect(refusal({ INTERLOCK_METRICS_ADDR: bad }).message).toContain('INTERLOCK_METRICS_ADDR');
  });

  it("refuses the service's own HTTP address, which would hold the port the API needs, for a process that listens on it", () => {
    const clash = (env: Record<string, string>, listens = true) => {
      try {
        assertMetricsAddrFree(loadConfig(env), listens);
        return null;
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
    };
    expect(clash({ INTERLOCK_METRICS_ADDR: '127.0.0.1:3000' })).toContain("INTERLOCK_METRICS_ADDR (127.0.0.1:3000) is the service's own HTTP address");
    expect(clash({ INTERLOCK_METRICS_ADDR: '0.0.0.0:8080', INTERLOCK_PORT: '8080' })).toContain('INTERLOCK_METRICS_ADDR');
    expect(clash({ INTERLOCK_METRICS_ADDR: '127.0.0.1:3000', INTERLOCK_PORT: '0' })).toBeNull();
    expect(clash({ INTERLOCK_METRICS_ADDR: '127.0.0.2:3000' })).toBeNull();
    // A process without the api or webhooks role takes no HTTP port: any metrics port is free for it.
    expect(clash({ INTERLOCK_METRICS_ADDR: '0.0.0.0:3000', INTERLOCK_HOST: '0.0.0.0' }, false)).toBeNull();
  });
});

// RULE: an INTERLOCK_* variable no part of the service reads is named at start with the setting nearest to it, and
// ignored (a warning, not a refusal: see unknownSettings); the list of settings is one, and whole.
describe('unknown INTERLOCK_* variables', () => {
  it('the list of settings holds every INTERLOCK_* variable the code reads (env.NAME, or NAME as a string), and each is a row of the README\'s table', () => {
    const root = fileURLToPath(new URL('..', import.meta.url));
    const sources = (dir: string): string[] =>
      readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) return entry.name === 'tests' || entry.name === 'node_modules' ? [] : sources(path);
        return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
      });
    const named = new Set(['src', 'webhooks', 'queues', 'sandbox'].flatMap(sources).flatMap((file) => [...readFileSync(join(root, file), 'utf8').matchAll(/(?:env\.|['"`])(INTERLOCK_[A-Z0-9_]*[A-Z0-9])\b/g)].map((match) => match[1] ?? '')));
    expect(named.size).toBeGreaterThan(10);
    expect([...named].filter((name) => !INTERLOCK_SETTINGS.includes(name)).sort()).toEqual([]);
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Configuration\n'), readme.indexOf('\n## Redis\n'));
    expect(INTERLOCK_SETTINGS.filter((name) => !section.includes(`\`${name}\``))).toEqual([]);
  });

  it('names each set INTERLOCK_* variable that is no setting, with the nearest setting; empty ones and other prefixes are left alone', () => {
    expect(unknownSettings({ INTERLOCK_SIGNING_KEY: '/etc/interlock/signing-key.pem', INTERLOCK_REDIS_MIN_REPLICA: '1', INTERLOCK_LOGLEVEL: 'debug', INTERLOCK_API_TOKEN: 'a:support:b', INTERLOCK_UNUSED: '', STRIPE_SECRET: 'x', INTERLOCK_PORT: '3000' })).toEqual([
      { variable: 'INTERLOCK_API_TOKEN', nearest: 'INTERLOCK_API_TOKENS' },
      { variable: 'INTERLOCK_LOGLEVEL', nearest: 'INTERLOCK_LOG_LEVEL' },
      { variable: 'INTERLOCK_REDIS_MIN_REPLICA', nearest: 'INTERLOCK_REDIS_MIN_REPLICAS' },
      { variable: 'INTERLOCK_SIGNING_KEY', nearest: 'INTERLOCK_SIGNING_KEY_FILE' },
    ]);
    // The decider's and the support API's settings are settings too.
    expect(unknownSettings({ INTERLOCK_MODEL: 'claude-haiku-4-5-20251001', INTERLOCK_MODEL_MAX_TURNS: '2', INTERLOCK_API_RATE_LIMIT: '0', INTERLOCK_API_FACT_TIMEOUT_MS: '500' })).toEqual([]);
  });
});

// REDIS_URL names its database one way, as a path (/N), checked at start. A query or fragment is refused by
// loadConfig naming REDIS_URL: ioredis reads `?key=value` as client options, so `?db=9` selected a database no check
// saw (a Redis that refuses it left the client on database 0, another deployment's data, and the start went on) and
// `?keyPrefix=` wrote every key under another prefix. The refusal names the query by kind only (it may hold a secret).
describe('REDIS_URL with a query or a fragment', () => {
  it.each([
    ['redis://127.0.0.1:6379?db=9'],
    ['redis://127.0.0.1:6379/2?db=9'],
    ['redis://127.0.0.1:6379?keyPrefix=zz:'],
    ['rediss://cache.example:6380/?tls=false'],
    ['redis://127.0.0.1:6379/1#db=9'],
  ])('%s is refused naming REDIS_URL and the way to name a database (/N)', (url) => {
    const message = refusal({ REDIS_URL: url }).message;
    expect(message).toContain('REDIS_URL must not carry ?options');
    expect(message).toContain('name the database as /N');
  });

  it('the refusal does not repeat the query, which may hold a password', () => {
    expect(refusal({ REDIS_URL: 'redis://127.0.0.1:6379?password=s3cr3t-in-query' }).message).not.toContain('s3cr3t-in-query');
  });

  it('a "#" written raw in a password (the rest reads as a fragment) is refused with how to write it, not quoted', () => {
    const message = refusal({ REDIS_URL: 'redis://app:Se@cr#etTail99@127.0.0.1:6379/2' }).message;
    expect(message).toContain('write a "?" or "#" in the password as %3F or %23');
    expect(message).not.toMatch(/Se@|cr#|etTail99/);
  });

  it('a database named by its path, or none, is still taken', () => {
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379/9' }).redisUrl).toBe('redis://127.0.0.1:6379/9');
    expect(loadConfig({ REDIS_URL: 'redis://:pw@127.0.0.1:6379' }).redisUrl).toBe('redis://:pw@127.0.0.1:6379');
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379/' }).redisUrl).toBe('redis://127.0.0.1:6379/');
  });
});

// Rule: INTERLOCK_CREDIT_CURRENCY is a currency Stripe supports (a lowercase ISO 4217 code Stripe takes in a customer
// balance transaction), or the service does not start: a typo such as `uds` is three lowercase letters, so it used to
// pass, and showed only later, as every credit refused by Stripe after its dispatch. The refusal names the variable,
// the value given and examples of good ones; an upper-case code Stripe supports is told to be written in lowercase.
// src/ keeps its own list of Stripe's currencies (src/ and sandbox/ import nothing from each other): the sandbox's (a US
// account's), so the sandbox takes every credit such a configuration names, and the three-decimal currencies Stripe
// takes from accounts in their regions, which the gate writes in thousandths (src/core/money-text.ts).
describe('INTERLOCK_CREDIT_CURRENCY', () => {
  it('refuses a three-letter code that is not a currency Stripe supports, naming the value and giving examples', () => {
    for (const typo of ['uds', 'xyz', 'eru']) {
      const { message } = refusal({ INTERLOCK_CREDIT_CURRENCY: typo });
      expect(message).toContain(`INTERLOCK_CREDIT_CURRENCY: "${typo}" is not an ISO 4217 currency code Stripe supports`);
      expect(message).toContain('such as usd, eur, gbp or jpy');
    }
  });

  it('tells an upper-case code Stripe supports to be written in lowercase', () => {
    expect(refusal({ INTERLOCK_CREDIT_CURRENCY: 'EUR' }).message).toContain('INTERLOCK_CREDIT_CURRENCY: "EUR" must be written in lowercase, as eur');
  });

  it('refuses what is not a code at all by name too', () => {
    for (const bad of ['euro', 'e1r', '$', 'us d']) expect(refusal({ INTERLOCK_CREDIT_CURRENCY: bad }).message).toContain(`INTERLOCK_CREDIT_CURRENCY: ${JSON.stringify(bad)}`);
  });

  it('takes every currency Stripe supports, usd when unset', () => {
    expect(loadConfig({}).creditCurrency).toBe('usd');
    for (const code of STRIPE_CURRENCIES) expect(loadConfig({ INTERLOCK_CREDIT_CURRENCY: code }).creditCurrency).toBe(code);
  });

  it("holds the sandbox's currencies and the three-decimal ones, lowercase three-letter codes", () => {
    expect([...STRIPE_CURRENCIES].sort()).toEqual([...SUPPORTED_CURRENCIES, 'bhd', 'jod', 'kwd', 'omr', 'tnd'].sort());
    expect(loadConfig({ INTERLOCK_CREDIT_CURRENCY: 'kwd' }).creditCurrency).toBe('kwd');
    expect(STRIPE_CURRENCIES.every((code) => /^[a-z]{3}$/.test(code))).toBe(true);
  });
});
