// RULE: a secret put in the wrong setting is refused naming the setting, never echoed. An operator who swaps two lines
// of an env file puts the Stripe secret key (or the webhook signing secret) in STRIPE_API_BASE, or a key in
// INTERLOCK_HOST: the refusal shows such a value masked (src/core/redact.ts shownSetting: `sk_live_…cdef`), and the
// CLI masks every secret in what it prints on failure (reportFailure, printProblem run redactSecrets), so the key
// never lands on stderr nor in whatever collects it (a container log, a CI log).
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { inTempDir, runCli } from './run-cli.js';

const LIVE_KEY = 'sk_live_51Hq7RvOpsReviewNotARealKey0123456789abcdef';
const WEBHOOK_SECRET = 'whsec_RvOpsReviewNotARealSecret0123456789abcdef';

let redis: PrivateRedis | null = null;
afterAll(async () => {
  await redis?.stop();
});

it('a Stripe live key put in STRIPE_API_BASE is refused naming the setting, without printing the key', async () => {
  await inTempDir('secret-in-setting', async (dir) => {
    const run = await runCli(['serve', '--roles', 'worker'], { INTERLOCK_DATA_DIR: dir, STRIPE_SECRET_KEY: 'sk_test_secretsetting', STRIPE_API_BASE: LIVE_KEY });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('STRIPE_API_BASE (sk_live_…cdef) is not a URL');
    expect(run.stderr).not.toContain(LIVE_KEY);
  });
}, 60_000);

it('a webhook signing secret put in STRIPE_API_BASE is refused by any command without printing the secret', async () => {
  await inTempDir('secret-in-setting', async (dir) => {
    const run = await runCli(['effect', 'show', '--request', 'case-1'], { INTERLOCK_DATA_DIR: dir, STRIPE_SECRET_KEY: 'sk_test_secretsetting', STRIPE_API_BASE: WEBHOOK_SECRET });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('STRIPE_API_BASE');
    expect(run.stderr).not.toContain(WEBHOOK_SECRET);
  });
}, 60_000);

it('an address put in STRIPE_API_BASE without its scheme is still quoted, so the operator sees what to correct', async () => {
  await inTempDir('secret-in-setting', async (dir) => {
    const run = await runCli(['effect', 'show', '--request', 'case-1'], { INTERLOCK_DATA_DIR: dir, STRIPE_SECRET_KEY: 'sk_test_secretsetting', STRIPE_API_BASE: '127.0.0.1:12111' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('STRIPE_API_BASE (127.0.0.1:12111) is not a URL');
  });
}, 60_000);

it('a Stripe live key put in INTERLOCK_HOST fails the start naming the address setting, without printing the key', async () => {
  redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
  const prefix = `secret-host-${randomBytes(4).toString('hex')}`;
  await inTempDir('secret-in-setting', async (dir) => {
    // The keys it writes stay in the private Redis, removed with it.
    const run = await runCli(['serve', '--roles', 'api', '--port', '0'], { INTERLOCK_DATA_DIR: join(dir, 'data'), REDIS_URL: redis?.url, INTERLOCK_KEY_PREFIX: prefix, STRIPE_SECRET_KEY: 'sk_test_secretsetting', STRIPE_API_BASE: 'http://127.0.0.1:1', INTERLOCK_HOST: LIVE_KEY, INTERLOCK_LOG_LEVEL: 'warn' });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('INTERLOCK_HOST');
    expect(run.stderr).toContain('sk_live_…cdef');
    expect(run.stderr).not.toContain(LIVE_KEY);
  });
}, 60_000);
