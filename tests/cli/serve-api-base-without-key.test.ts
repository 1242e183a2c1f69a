// Rule: a setting the operator gave is never silently replaced by an embedded default. `serve` with STRIPE_API_BASE set
// and STRIPE_SECRET_KEY unset refuses to start (exit 2) naming STRIPE_SECRET_KEY, before it starts anything: it used
// to start its own sandbox at another address (or take the sandbox of a running service from its service.json) and
// drop the address it was given.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { REDIS_URL, removePrefixes } from '../support/harness.js';
import { inTempDir, runCli } from './run-cli.js';

const GIVEN = 'http://127.0.0.1:12999';
const REFUSAL = 'STRIPE_API_BASE is set but STRIPE_SECRET_KEY is not: set the key too (sk_test_sandbox for a sandbox)';

it('with no service running: exits 2 naming STRIPE_SECRET_KEY, with no private Redis or sandbox started', async () => {
  await inTempDir('base-no-key', async (dir) => {
    const dataDir = join(dir, 'data');
    const run = await runCli(['serve', '--port', '0'], { INTERLOCK_DATA_DIR: dataDir, REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined, STRIPE_API_BASE: GIVEN, STRIPE_WEBHOOK_SECRET: undefined }, { timeoutMs: 15_000 });
    expect(run.stdout).not.toContain('is running');
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(REFUSAL);
    expect(existsSync(join(dataDir, 'redis'))).toBe(false);
  });
}, 30_000);

it('joining a running service: its sandbox does not replace the STRIPE_API_BASE given; the start is refused the same way', async () => {
  const prefix = `basenokey-${randomBytes(4).toString('hex')}`;
  try {
    await inTempDir('base-no-key-join', async (dir) => {
      const dataDir = join(dir, 'data');
      mkdirSync(dataDir, { recursive: true });
      // The service.json of a running `npm start` (this test's process stands in for it) with its embedded sandbox.
      const facts = { pid: process.pid, redis_url: REDIS_URL, key_prefix: prefix, stripe_secret_key: 'sk_test_sandbox', stripe_api_base: 'http://127.0.0.1:12111' };
      writeFileSync(join(dataDir, 'service.json'), JSON.stringify(facts), { mode: 0o600 });
      const run = await runCli(['serve', '--roles', 'worker'], { INTERLOCK_DATA_DIR: dataDir, REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined, INTERLOCK_UNSAFE_DURABILITY: '1', STRIPE_SECRET_KEY: undefined, STRIPE_API_BASE: GIVEN }, { timeoutMs: 15_000 });
      expect(run.stdout).not.toContain('is running');
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(REFUSAL);
    });
  } finally {
    await removePrefixes([prefix]);
  }
}, 30_000);
