// Rule: a refusal's advice must work when followed. `serve` against Stripe without STRIPE_WEBHOOK_SECRET names the
// `stripe listen --forward-to` line to run; when this start chose its port (INTERLOCK_PORT=0, or the default 3000
// taken and no port set), the next start would choose another and the listener would forward to nothing: the advice
// then names that port in INTERLOCK_PORT too. A port that was set is the next start's already and is not repeated.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '..', '..');
const dataDir = mkdtempSync(join(tmpdir(), 'interlock-port-advice-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function refusal(port: string): string {
  const env: NodeJS.ProcessEnv = { ...process.env, INTERLOCK_DATA_DIR: dataDir, REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', INTERLOCK_KEY_PREFIX: `port-advice-${process.pid}`, STRIPE_SECRET_KEY: 'sk_test_abcdefghijklmnopqrstuvwx', INTERLOCK_UNSAFE_DURABILITY: '1', INTERLOCK_PORT: port, INTERLOCK_LOG_LEVEL: 'silent' };
  delete env.STRIPE_API_BASE;
  delete env.STRIPE_WEBHOOK_SECRET;
  const run = spawnSync(process.execPath, [join(REPO, 'bin', 'interlock.js'), 'serve'], { cwd: REPO, env, encoding: 'utf8', timeout: 30_000 });
  expect(run.status).toBe(2);
  return run.stderr;
}

describe('the refusal of a start without STRIPE_WEBHOOK_SECRET', () => {
  it('names the port it forwards to in INTERLOCK_PORT when this start chose it', () => {
    const said = refusal('0');
    const port = /--forward-to http:\/\/127\.0\.0\.1:(\d+)\/webhooks\/stripe/.exec(said)?.[1];
    expect(port).toBeDefined();
    expect(said).toContain(`and INTERLOCK_PORT to ${port} (port 0 picks another at every start: this start chose ${port}, and the next would choose another)`);
  });

  it('says nothing of the port when it was set', () => {
    const said = refusal('39477');
    expect(said).toContain('--forward-to http://127.0.0.1:39477/webhooks/stripe');
    expect(said).not.toContain('INTERLOCK_PORT');
  });
});
