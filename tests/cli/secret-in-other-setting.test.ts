// Rule: a secret put in the wrong setting is refused naming the setting, never echoed (tests/cli/secret-in-setting.test.ts).
// An API token (16 to 256 characters; the generated ones 43 base64url characters, with no prefix the log redaction
// knows) that a swapped env-file line puts in INTERLOCK_CREDIT_CURRENCY or INTERLOCK_METRICS_HOSTS is refused by its
// length only, a Stripe key by its kind, a URL without its password; a password holding "/" that leaves part of
// itself in REDIS_URL's path is not quoted either. An honest typo (`uds`, `worker:9464`) is still quoted as written.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { inTempDir, runCli } from './run-cli.js';

const TOKEN = 'Zm9vYmFyYmF6cXV4U2VjcmV0T3RoZXJTZXR0aW5nMDEy';
const LIVE_KEY = 'sk_live_51Hq7RvOtherSettingNotARealKey0123456789abcdef';

function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error(`${JSON.stringify(Object.keys(env))} was taken`);
}

describe('a secret in a setting that quotes what it refuses', () => {
  for (const [variable, value] of [
    ['INTERLOCK_CREDIT_CURRENCY', TOKEN],
    ['INTERLOCK_METRICS_HOSTS', `local-support:support:${TOKEN}`],
  ] as const) {
    it(`the CLI refuses an API token in ${variable} naming the setting, without printing the token`, { timeout: 60_000 }, async () => {
      await inTempDir('secret-other-setting', async (dir) => {
        const run = await runCli(['approvals', 'describe', 'ap_x'], { INTERLOCK_DATA_DIR: dir, [variable]: value });
        expect(run.code, run.stderr).toBe(2);
        expect(run.stderr).toContain(variable);
        expect(run.stderr).not.toContain(TOKEN);
      });
    });
  }

  it('INTERLOCK_CREDIT_CURRENCY shows a token by its length, a Stripe key by its kind, a URL without its password', () => {
    expect(refusal({ INTERLOCK_CREDIT_CURRENCY: TOKEN })).toContain(`INTERLOCK_CREDIT_CURRENCY: the value given (${TOKEN.length} characters, not shown) is not an ISO 4217 currency code`);
    const keyed = refusal({ INTERLOCK_CREDIT_CURRENCY: LIVE_KEY });
    expect(keyed).toContain('the value given (sk_live_…cdef)');
    expect(keyed).not.toContain(LIVE_KEY);
    const url = refusal({ INTERLOCK_CREDIT_CURRENCY: 'redis://default:CurrencyUrlPassword@redis:6379' });
    expect(url).toContain('the value given (redis://…@redis:6379)');
    expect(url).not.toContain('CurrencyUrlPassword');
  });

  it('INTERLOCK_METRICS_HOSTS shows an entry holding a token by its length, and a URL entry without its password', () => {
    const entry = `local-support:support:${TOKEN}`;
    expect(refusal({ INTERLOCK_METRICS_HOSTS: `worker,${entry}` })).toContain(`INTERLOCK_METRICS_HOSTS: an entry (${entry.length} characters, not shown) is not a host name`);
    const url = refusal({ INTERLOCK_METRICS_HOSTS: 'http://scraper:MetricsUrlPassword@worker' });
    expect(url).toContain('an entry (http://…@worker) is not a host name');
    expect(url).not.toContain('MetricsUrlPassword');
  });

  it('an honest typo is still quoted as written, so the operator sees what to correct', () => {
    expect(refusal({ INTERLOCK_CREDIT_CURRENCY: 'uds' })).toContain('INTERLOCK_CREDIT_CURRENCY: "uds" is not an ISO 4217 currency code');
    expect(refusal({ INTERLOCK_CREDIT_CURRENCY: 'EUR' })).toContain('INTERLOCK_CREDIT_CURRENCY: "EUR" must be written in lowercase, as eur');
    expect(refusal({ INTERLOCK_METRICS_HOSTS: 'worker:9464' })).toContain('INTERLOCK_METRICS_HOSTS: "worker:9464" is not a host name');
    expect(refusal({ INTERLOCK_METRICS_HOSTS: 'metrics.internal.example:9464' })).toContain('INTERLOCK_METRICS_HOSTS: "metrics.internal.example:9464" is not a host name');
    expect(refusal({ REDIS_URL: 'redis://127.0.0.1:6379/abc' })).toContain(`REDIS_URL's path "/abc" must be a database number`);
  });

  it('a REDIS_URL password holding "/" after digits is refused without quoting the part of it the URL read as a path', () => {
    // The URL ends the port at the "/", so "1234" reads as a port and the rest of the password as the path.
    const message = refusal({ REDIS_URL: 'redis://default:1234/RedisPathPassword@redis:6379' });
    expect(message).toContain('REDIS_URL');
    expect(message).toContain('%2F');
    expect(message).not.toContain('RedisPathPassword');
  });
});
