// Rule: a "not found" answer names where it looked (README, The command line: commands find the service through the
// data dir's service.json; tests/cli/not-found-names-where.test.ts holds `effect show` and `case show` to it). Run
// from the wrong directory (no service.json, REDIS_URL unset), `approvals describe|revoke`, `refund` and `case` read
// the default Redis: their "No approval ap_1" says so, and never sends the operator to grant money on a Redis no
// service reads.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';

const data = tempDir('rv-cli67-nowhere');
afterAll(async () => {
  data.remove();
  // The default Redis the commands fell back to is the shared one: drop what they wrote under this prefix.
  const redis = new Redis('redis://127.0.0.1:6379');
  const keys = await redis.keys(`*${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

const prefix = `rv-cli67-${randomBytes(4).toString('hex')}`;
const env = { REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: data.dir, STRIPE_SECRET_KEY: 'sk_test_sandbox', STRIPE_API_BASE: 'http://127.0.0.1:1' };
const fellBack = new RegExp(`127\\.0\\.0\\.1:6379.*no service\\.json was found in ${data.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`);

it.each([
  ['approvals describe', ['approvals', 'describe', 'ap_nothere'], 1],
  ['approvals revoke', ['approvals', 'revoke', 'ap_nothere', '--by', 'lee'], 1],
  ['refund', ['refund', '--request', 'case-nowhere-1', '--payment-intent', 'pi_nothere', '--amount', '100', '--approval', 'ap_nothere'], 2],
  ['case', ['case', '--case', 'nowhere-1', '--payment-intent', 'pi_nothere', '--story', 'The jar arrived cracked', '--approval', 'ap_nothere'], 2],
] as const)('%s of an unknown approval, with no service.json and REDIS_URL unset, says the default Redis was read', async (_name, args, code) => {
  const run = await runCli(args, env);
  expect(run.code, run.stderr).toBe(code);
  expect(run.stderr).toContain('No approval ap_nothere');
  expect(run.stderr).toMatch(fellBack);
  expect(run.stderr).not.toContain('Grant it first');
});

// Rule: an empty answer read from a Redis the command fell back to says so: "No open alerts." (exit 0) read from the
// default Redis because the data dir holds no service.json reads as "no money at stake" for the service elsewhere.
it('alerts, with no service.json and REDIS_URL unset, says the default Redis was read beside "No open alerts."', async () => {
  const run = await runCli(['alerts'], env);
  expect(run.stdout).toContain('No open alerts.');
  expect(`${run.stdout}${run.stderr}`).toMatch(fellBack);
});

// Rule: a command that records nothing leaves nothing behind that later reads as the deployment's. A `refund` refused
// before it wrote (an approval not found, from the wrong data dir) saves no DATA_DIR/keys/signing-key.pem, which
// `interlock keys public` there would print as "the public key that verifies this gate's receipts".
it('a refund refused for an unknown approval from a data dir with no service.json makes no signing key there', async () => {
  const dir = tempDir('rv-cli67-nokey');
  try {
    const here = { ...env, INTERLOCK_DATA_DIR: dir.dir };
    const run = await runCli(['refund', '--request', 'case-nowhere-2', '--payment-intent', 'pi_nothere', '--amount', '100', '--approval', 'ap_nothere'], here);
    expect(run.code, run.stderr).toBe(2);
    const { existsSync } = await import('node:fs');
    const { join } = await import('node:path');
    expect(existsSync(join(dir.dir, 'keys', 'signing-key.pem'))).toBe(false);
  } finally {
    dir.remove();
  }
});
