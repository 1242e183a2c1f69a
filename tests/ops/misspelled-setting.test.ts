// RULE: an INTERLOCK_* variable that no part of the service reads is named at start, with the setting nearest to it,
// and the start goes on. An operator who writes INTERLOCK_SIGNING_KEY=/etc/interlock/signing-key.pem (meaning
// INTERLOCK_SIGNING_KEY_FILE) otherwise gets a service that signs every receipt with a key it just generated, one no
// auditor holds, without a word. `serve` logs a warning (level 40, `variable` and `nearest`); a command says it on
// stderr. A warning, not a refusal: deployments set variables of their own under the prefix (scripts', tests'), and a
// refusal would stop services that run as configured (src/config.ts unknownSettings).
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { spawnWorker } from '../pipeline/pipeline-support.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { runCli, tempDir } from '../cli/run-cli.js';

const temp = tempDir('ops-typo');
let redis: PrivateRedis | null = null;
afterAll(async () => {
  await redis?.stop();
  temp.remove();
});

it('serve with INTERLOCK_SIGNING_KEY (meant: INTERLOCK_SIGNING_KEY_FILE) starts and logs a warning naming it and the setting meant', async () => {
  redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
  const keyFile = join(temp.dir, 'signing-key.pem');
  writeFileSync(keyFile, generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
  // The keys it writes stay in the private Redis, removed with it.
  const prefix = `ops-typo-${randomBytes(4).toString('hex')}`;
  const service = spawnWorker({ REDIS_URL: redis.url, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: join(temp.dir, 'data'), STRIPE_SECRET_KEY: 'sk_test_opstypo', STRIPE_API_BASE: 'http://127.0.0.1:1', INTERLOCK_SIGNING_KEY_FILE: '', INTERLOCK_SIGNING_KEY: keyFile, INTERLOCK_REDIS_MIN_REPLICA: '1' }, ['serve', '--roles', 'worker']);
  try {
    await service.ready;
    const warnings = service
      .logs()
      .split('\n')
      .filter((line) => line.includes('"variable"'))
      .map((line) => JSON.parse(line) as { level: number; variable: string; nearest: string; msg: string })
      // The test runner's own INTERLOCK_* variables (npm test's outcome coverage) are named too, and the start goes on.
      .filter((warning) => ['INTERLOCK_SIGNING_KEY', 'INTERLOCK_REDIS_MIN_REPLICA'].includes(warning.variable));
    expect(warnings).toEqual([
      expect.objectContaining({ level: 40, variable: 'INTERLOCK_REDIS_MIN_REPLICA', nearest: 'INTERLOCK_REDIS_MIN_REPLICAS' }),
      expect.objectContaining({ level: 40, variable: 'INTERLOCK_SIGNING_KEY', nearest: 'INTERLOCK_SIGNING_KEY_FILE', msg: expect.stringContaining('INTERLOCK_SIGNING_KEY is set but is not a setting') as string }),
    ]);
  } finally {
    await service.stop();
  }
}, 90_000);

it('a command names the misspelled variable on stderr and still runs; INTERLOCK_LOG_LEVEL=silent keeps it quiet', async () => {
  redis ??= await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
  const env = { REDIS_URL: redis.url, INTERLOCK_KEY_PREFIX: `ops-typo-${randomBytes(4).toString('hex')}`, INTERLOCK_DATA_DIR: join(temp.dir, 'cli'), INTERLOCK_LOGLEVEL: 'debug' };
  const told = await runCli(['approvals', 'describe', 'ap_ops_typo'], { ...env, INTERLOCK_LOG_LEVEL: undefined });
  expect(told.code, told.stderr).toBe(1);
  expect(told.stderr).toContain('INTERLOCK_LOGLEVEL is set but is not a setting of this service, so it changes nothing (the nearest setting is INTERLOCK_LOG_LEVEL).');
  const quiet = await runCli(['approvals', 'describe', 'ap_ops_typo'], { ...env, INTERLOCK_LOG_LEVEL: 'silent' });
  expect(quiet.code, quiet.stderr).toBe(1);
  expect(quiet.stderr).not.toContain('INTERLOCK_LOGLEVEL');
}, 90_000);
