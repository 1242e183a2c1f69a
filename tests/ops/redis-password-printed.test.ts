// RULE: a REDIS_URL's password never reaches stderr, whatever it holds. The service shows the URL it could not reach
// built from its parsed parts (scheme, `…@`, host, port, database: src/core/redact.ts shownUrl), so a passphrase with
// spaces ("correct horse battery staple", which Redis ACLs accept and the client connects with) or a password with
// an "@" then a "#" (the client takes what follows the "#" as the URL's fragment) is never printed, by `serve` nor by
// any command, when Redis cannot be reached. Masking the raw text with a regex stopped at the first space.
import { expect, it } from 'vitest';
import { freePort } from '../support/private-redis.js';
import { inTempDir, runCli } from '../cli/run-cli.js';

const PASSWORD = 'correct horse battery staple';

it('a command that cannot reach Redis names it without printing a password that holds spaces', async () => {
  const port = await freePort();
  await inTempDir('ops-redis-pw', async (dir) => {
    const run = await runCli(['approvals', 'describe', 'ap_ops_pw'], { INTERLOCK_DATA_DIR: dir, REDIS_URL: `redis://app:${PASSWORD}@127.0.0.1:${port}`, INTERLOCK_KEY_PREFIX: 'ops-redis-pw' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`Cannot reach Redis at redis://…@127.0.0.1:${port} (`);
    expect(run.stderr).not.toContain('horse battery');
  });
}, 60_000);

it('a REDIS_URL whose password holds an "@" and a "#" is refused without printing any part of the password', async () => {
  const port = await freePort();
  await inTempDir('ops-redis-pw', async (dir) => {
    const run = await runCli(['approvals', 'describe', 'ap_ops_pw'], { INTERLOCK_DATA_DIR: dir, REDIS_URL: `redis://app:Se@cr#etTail99@127.0.0.1:${port}/2`, INTERLOCK_KEY_PREFIX: 'ops-redis-pw' });
    expect(run.code).toBe(2);
    // The "#" starts a fragment, which REDIS_URL refuses (the client would read what follows as settings); the
    // refusal says how to write it, and repeats none of the URL's text.
    expect(run.stderr).toContain('REDIS_URL must not carry');
    expect(run.stderr).toContain('%23');
    expect(run.stderr).not.toMatch(/Se@|cr#|etTail99/);
  });
}, 60_000);

it('serve that cannot reach Redis refuses to start without printing a password that holds spaces', async () => {
  const port = await freePort();
  await inTempDir('ops-redis-pw', async (dir) => {
    const run = await runCli(['serve', '--roles', 'worker'], { INTERLOCK_DATA_DIR: dir, REDIS_URL: `redis://app:${PASSWORD}@127.0.0.1:${port}/3`, INTERLOCK_KEY_PREFIX: 'ops-redis-pw', STRIPE_SECRET_KEY: 'sk_test_opspw', STRIPE_API_BASE: 'http://127.0.0.1:1', INTERLOCK_LOG_LEVEL: 'warn' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`Cannot reach Redis at redis://…@127.0.0.1:${port}/3 (`);
    expect(run.stderr).not.toContain('horse battery');
  });
}, 60_000);
