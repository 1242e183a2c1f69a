// Rule: a secret that lands in INTERLOCK_HOST or INTERLOCK_TRUST_PROXY by mistake (a swapped env-file line) is never
// printed: the refusal of a missing STRIPE_WEBHOOK_SECRET writes its `stripe listen --forward-to` line with the host
// as shownSetting shows it (a token by its length), and a part of INTERLOCK_TRUST_PROXY that is no address is named
// by its position and shown the same way. An address put there stays readable.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

const REPO = join(import.meta.dirname, '..', '..');
const dataDir = mkdtempSync(join(tmpdir(), 'interlock-secret-host-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const configError = (env: Record<string, string>) => {
  try {
    loadConfig(env);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('the configuration was taken');
};

describe('a secret in INTERLOCK_HOST', () => {
  it('is not printed by the refusal of a missing STRIPE_WEBHOOK_SECRET, which shows the host by its length', () => {
    const token = '_LJ8ASAk8-z8QjsWNZyJBjfhOtSLH2y6GmusMEQ8nwQ';
    const env: NodeJS.ProcessEnv = { ...process.env, INTERLOCK_DATA_DIR: dataDir, REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', INTERLOCK_KEY_PREFIX: `secret-host-${process.pid}`, STRIPE_SECRET_KEY: 'sk_test_abcdefghijklmnopqrstuvwx', INTERLOCK_UNSAFE_DURABILITY: '1', INTERLOCK_PORT: '39481', INTERLOCK_HOST: token, INTERLOCK_LOG_LEVEL: 'silent' };
    delete env.STRIPE_API_BASE;
    delete env.STRIPE_WEBHOOK_SECRET;
    const run = spawnSync(process.execPath, [join(REPO, 'bin', 'interlock.js'), 'serve'], { cwd: REPO, env, encoding: 'utf8', timeout: 30_000 });
    const output = `${run.stdout}${run.stderr}`;
    expect(run.status).toBe(2);
    expect(output).toContain('--forward-to http://43 characters, not shown:39481/webhooks/stripe');
    expect(output).not.toContain(token);
  });
});

describe('INTERLOCK_TRUST_PROXY', () => {
  it('names a part that is a secret by its position and length, never its value', () => {
    const secret = '9f3c2a7b1e8d4c6a0b5f7e2d11aa22bb';
    const message = configError({ INTERLOCK_TRUST_PROXY: `loopback, ${secret}` });
    expect(message).toContain('part 2 (32 characters, not shown) is not loopback');
    expect(message).not.toContain(secret);
  });

  it('shows a part that is a mistyped address as it was written', () => {
    expect(configError({ INTERLOCK_TRUST_PROXY: '10.0.0.300' })).toContain('part 1 (10.0.0.300) is not loopback');
  });
});
