// RULE: INTERLOCK_LOG_LEVEL set to the empty string (an env file's `INTERLOCK_LOG_LEVEL=`, a compose `${VAR:-}`) is
// unset, everywhere it is read, as loadConfig reads it: `serve` with the embedded sandbox starts (the sandbox logs at
// the service's level, and its logger takes '' as unset: pino throws on the level ''), and a CLI command logs warnings
// and worse, as it does with the variable unset.
import { randomBytes } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { spawnWorker } from '../pipeline/pipeline-support.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { runCli, tempDir } from '../cli/run-cli.js';

const temp = tempDir('ops-loglevel');
let redis: PrivateRedis | null = null;
afterAll(async () => {
  await redis?.stop();
  temp.remove();
});

it('serve with the embedded sandbox starts when INTERLOCK_LOG_LEVEL is empty (as loadConfig reads it: unset, info)', async () => {
  redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
  // The keys it writes stay in the private Redis, removed with it.
  const service = spawnWorker(
    { REDIS_URL: redis.url, INTERLOCK_KEY_PREFIX: `ops-loglevel-${randomBytes(4).toString('hex')}`, INTERLOCK_DATA_DIR: temp.dir, INTERLOCK_LOG_LEVEL: '', STRIPE_SECRET_KEY: '', STRIPE_API_BASE: '' },
    ['serve', '--port', '0'],
  );
  try {
    const outcome = await service.ready.then(
      () => 'serving',
      (error: Error) => error.message,
    );
    expect(outcome).toBe('serving');
    // The sandbox logs at info too: its start-up line is there.
    expect(service.logs()).toContain('"name":"stripe-sandbox"');
  } finally {
    await service.stop();
  }
}, 90_000);

it('a CLI command logs the same with INTERLOCK_LOG_LEVEL empty as with it unset (warn and worse)', async () => {
  redis ??= await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
  const env = { REDIS_URL: redis.url, INTERLOCK_KEY_PREFIX: `ops-loglevel-${randomBytes(4).toString('hex')}`, INTERLOCK_DATA_DIR: temp.dir, STRIPE_SECRET_KEY: 'sk_test_opsloglevel', STRIPE_API_BASE: 'http://127.0.0.1:1' };
  // `recover` writes a JSON "Redis durability checked" line at info: a command at warn does not.
  const unset = await runCli(['recover'], { ...env, INTERLOCK_LOG_LEVEL: undefined });
  const empty = await runCli(['recover'], { ...env, INTERLOCK_LOG_LEVEL: '' });
  expect(unset.code, unset.stderr).toBe(0);
  expect(empty.code, empty.stderr).toBe(0);
  expect(empty.stderr).toBe(unset.stderr);
  expect(empty.stderr).not.toContain('"level":30');
}, 90_000);
