// Rule: a message says what to do, and its advice can work. `interlock demo` run after `npm start` stopped reaches for
// that service's private Redis (its own port and password, from .data/service.json): it says so, naming service.json,
// its pid and `npm start`, as every other command does ("which is not running: start it again"), not "start
// redis-server or set REDIS_URL", which cannot bring that Redis back. With no service.json, that advice stands.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('demo-stopped');
afterAll(() => temp.remove());

/** A data directory whose service.json was left by a service that stopped cleanly, its private Redis gone with it. */
function stoppedServiceDir(): string {
  const dir = join(temp.dir, 'stopped');
  mkdirSync(dir, { mode: 0o700 });
  chmodSync(dir, 0o700);
  const facts = { pid: 4_000_000, stopped_at: '2026-01-01T00:00:00.000Z', redis_url: 'redis://:Sup3rS3cretPw@127.0.0.1:1', key_prefix: 'demo-stopped', redis_cluster: false };
  writeFileSync(join(dir, 'service.json'), JSON.stringify(facts), { mode: 0o600 });
  return dir;
}

it('demo, after the service that wrote service.json stopped, says to start that service again (npm start)', { timeout: 60_000 }, async () => {
  const dir = stoppedServiceDir();
  const run = await runCli(['demo'], { INTERLOCK_DATA_DIR: dir, REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined });
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr).toContain(`That is the Redis of the service that wrote ${join(dir, 'service.json')} (pid 4000000), which is not running: start it again`);
  expect(run.stderr).toContain('npm start');
  expect(run.stderr).not.toContain('redis-server');
  expect(run.stderr).not.toContain('Sup3rS3cretPw');
});

it('demo with a REDIS_URL nothing answers, and no service.json, still says to start a Redis or set REDIS_URL', { timeout: 60_000 }, async () => {
  const dir = join(temp.dir, 'none');
  const run = await runCli(['demo'], { INTERLOCK_DATA_DIR: dir, REDIS_URL: 'redis://127.0.0.1:1' });
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr).toContain('Cannot reach Redis at redis://127.0.0.1:1. Start one (`redis-server`');
  expect(run.stderr).not.toContain('not running');
});
