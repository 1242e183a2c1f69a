// Rule: the README's "Configuration": every setting refused is named, and the value refused is quoted in the message,
// numbers and INTERLOCK_TRUST_PROXY included (INTERLOCK_PORT=0x10 said what a port must be, never that it read
// "0x10"). A value that may be a secret (a token or key put in the wrong setting, REDIS_URL's password, a webhook
// secret) is never quoted whole: by its kind (sk_live_…wxyz) or its length only, as the flags' refusals show it.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { loadDeciderConfig } from '../src/decider/config.js';
import { runCli } from './cli/run-cli.js';

/** The message loadConfig refuses `env` with. */
function refusal(env: NodeJS.ProcessEnv, load: (env: NodeJS.ProcessEnv) => unknown = loadConfig): string {
  try {
    load(env);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`${JSON.stringify(env)} was accepted`);
}

describe('a refused number is quoted', () => {
  const cases: Array<[string, string, string]> = [
    ['INTERLOCK_PORT', '0x10', 'must be a whole number written in decimal digits'],
    ['INTERLOCK_PORT', '99999', 'must be at most 65535'],
    ['INTERLOCK_CONCURRENCY', 'abc', 'must be a whole number written in decimal digits'],
    ['INTERLOCK_CONCURRENCY', '0', 'must be at least 1'],
    ['INTERLOCK_RECOVERY_INTERVAL_MS', '99999999999', 'must be at most 2147483647 ms'],
    ['INTERLOCK_REDIS_COMMAND_TIMEOUT_MS', '99', 'must be at least 100 ms'],
    ['INTERLOCK_DEDUP_MARGIN_MS', '1e3', 'must be a whole number written in decimal digits'],
  ];
  for (const [name, value, what] of cases) {
    it(`${name}=${value}`, () => {
      const message = refusal({ [name]: value });
      expect(message).toContain(`${name}: ${what}`);
      expect(message).toContain(`(given: "${value}")`);
    });
  }

  it("the decider's counts alike", () => {
    expect(refusal({ INTERLOCK_MODEL_MAX_TURNS: '1' }, loadDeciderConfig)).toContain('INTERLOCK_MODEL_MAX_TURNS: must be at least 2');
    expect(refusal({ INTERLOCK_MODEL_MAX_TURNS: '1' }, loadDeciderConfig)).toContain('(given: "1")');
    expect(refusal({ INTERLOCK_MODEL_MAX_TOKENS: '1e3' }, loadDeciderConfig)).toContain('(given: "1e3")');
  });

  it('`serve` with INTERLOCK_PORT=0x10 exits 2 quoting it', { timeout: 60_000 }, async () => {
    const run = await runCli(['serve'], { INTERLOCK_PORT: '0x10', INTERLOCK_DATA_DIR: '/nonexistent/never-made' });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('INTERLOCK_PORT: must be a whole number written in decimal digits (no sign, exponent, fraction or 0x) (given: "0x10")');
  });
});

describe('INTERLOCK_TRUST_PROXY refused is quoted', () => {
  it('true, a hop count out of range, and ranges that together are too wide', () => {
    expect(refusal({ INTERLOCK_TRUST_PROXY: 'true' })).toContain('(given: "true")');
    expect(refusal({ INTERLOCK_TRUST_PROXY: '10' })).toContain('INTERLOCK_TRUST_PROXY: a number of hops must be from 1 to 9 (given: "10")');
    const wide = Array.from({ length: 3 }, (_, index) => `${index + 11}.0.0.0/8`).join(',');
    expect(refusal({ INTERLOCK_TRUST_PROXY: wide })).toContain(`(given: "${wide}")`);
  });

  it('a long list of ranges is shortened, and a token there is not shown', () => {
    const many = Array.from({ length: 40 }, (_, index) => `${index + 11}.0.0.0/8`).join(',');
    const message = refusal({ INTERLOCK_TRUST_PROXY: many });
    expect(message).toContain(`(given: "${many.slice(0, 100)}"…, ${many.length} characters)`);
    expect(message).not.toContain(many);
    const token = 'Zm9vYmFyYmF6cXV4cXV1eHh5enp5';
    const tokenMessage = refusal({ INTERLOCK_TRUST_PROXY: token });
    expect(tokenMessage).toContain(`(given: ${token.length} characters, not shown)`);
    expect(tokenMessage).not.toContain(token);
  });
});

describe('a secret in the wrong setting is never quoted whole', () => {
  const token = 'abcdefghijklmnopqrstuvwxyz012345';
  const key = 'sk_live_51AbCdEfGhIjKlMnOpQrStUvWx';
  it('a token or a key given as a number', () => {
    const byLength = refusal({ INTERLOCK_PORT: token });
    expect(byLength).toContain('(given: 32 characters, not shown)');
    expect(byLength).not.toContain(token);
    const byKind = refusal({ INTERLOCK_CONCURRENCY: key });
    expect(byKind).toContain('(given: sk_live_…UvWx)');
    expect(byKind).not.toContain(key);
  });

  it("REDIS_URL's password, written as a URL or not", () => {
    for (const url of ['http://default:Sup3rS3cretPw@127.0.0.1:6379', 'default:Sup3rS3cretPw@cache:6379', 'redis://default:Sup3rS3cretPw@127.0.0.1:6379?db=2', 'redis://default:123#Sup3rS3cretPw@cache', 'redis://default:50%off-Sup3rS3cretPw@127.0.0.1:6379']) {
      const message = refusal({ REDIS_URL: url });
      expect(message, url).toContain('REDIS_URL');
      expect(message, url).not.toContain('Sup3rS3cretPw');
    }
    expect(refusal({ REDIS_URL: 'http://default:Sup3rS3cretPw@127.0.0.1:6379' })).toContain('(given: http://…@127.0.0.1:6379)');
    expect(refusal({ REDIS_URL: '127.0.0.1:6379' })).toContain('(given: "127.0.0.1:6379")');
    expect(refusal({ REDIS_URL: 'default:Sup3rS3cretPw@cache:6379' })).toContain('(given: 32 characters, not shown)');
  });

  it('a webhook secret by its kind, anything else there by its length', () => {
    const secret = 'whsec_abcdefghijklmnopqrstuvwxyz!';
    const message = refusal({ STRIPE_WEBHOOK_SECRET: `${secret},nope` });
    expect(message).toContain('STRIPE_WEBHOOK_SECRET: must be one or more whsec_… secrets, comma-separated (given: whsec_…xyz!, 4 characters, not shown)');
    expect(message).not.toContain(secret);
    expect(message).not.toContain('nope');
  });
});
