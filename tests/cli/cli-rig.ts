// The wiring CLI tests share: the machine's Redis under a random key prefix, and the environment that points the real
// binary at it with a private data directory. The rig registers the afterAll that deletes its prefix's keys and the
// directory, so a test file deletes only its own.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import { REDIS_URL } from '../support/harness.js';
import { tempDir } from './run-cli.js';

export type CliRig = {
  /** REDIS_URL, INTERLOCK_KEY_PREFIX and INTERLOCK_DATA_DIR for runCli. */
  env: { REDIS_URL: string; INTERLOCK_KEY_PREFIX: string; INTERLOCK_DATA_DIR: string };
  /** The key prefix the binary writes under. */
  prefix: string;
  redis: Redis;
};

/** A rig for one test file; `label` names its temporary data directory. */
export function cliRig(label: string): CliRig {
  const prefix = `tcli${randomBytes(5).toString('hex')}`;
  const temp = tempDir(label);
  const redis = new Redis(REDIS_URL);
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
    temp.remove();
  });
  return { env: { REDIS_URL, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: temp.dir }, prefix, redis };
}
