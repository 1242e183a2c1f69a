// `npx interlock` commands find the running service through <data dir>/service.json when REDIS_URL is unset: the
// Redis and the key prefix it serves, whether it started a private Redis or was given REDIS_URL and
// INTERLOCK_KEY_PREFIX. A command that went to another Redis (127.0.0.1:6379) or another prefix would record work
// no worker of the service ever takes, and the start-up lines' commands would not work as printed.
import { randomBytes } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { spawnWorker } from '../pipeline/pipeline-support.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('service-file');
let redis: PrivateRedis | null = null;
afterAll(async () => {
  await redis?.stop();
  temp.remove();
});

it('a command with only the data directory reaches the Redis and key prefix serve was given', async () => {
  redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
  const prefix = `tsf${randomBytes(5).toString('hex')}`;
  const given = { REDIS_URL: redis.url, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: temp.dir };
  const service = spawnWorker({ ...given, STRIPE_SECRET_KEY: 'sk_test_servicefile' }, ['serve', '--roles', 'api', '--port', '0']);
  try {
    await service.ready;
    const granted = await runCli(['approvals', 'grant', '--id', 'ap_service_file', '--approver', 'dana@support', '--cap-cents', '2000', '--scope', 'payment:pi_service_file'], given);
    expect(granted.code, granted.stderr).toBe(0);
    // As the start-up lines say: from this directory, in another terminal, nothing else set.
    const described = await runCli(['approvals', 'describe', 'ap_service_file'], { INTERLOCK_DATA_DIR: temp.dir, REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined, STRIPE_SECRET_KEY: undefined, STRIPE_API_BASE: undefined });
    expect(described.code, described.stderr).toBe(0);
    expect(JSON.parse(described.stdout)).toMatchObject({ id: 'ap_service_file', capCents: 2_000 });
  } finally {
    await service.stop();
  }
}, 120_000);
