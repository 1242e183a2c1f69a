// Rule: commands find the service through <INTERLOCK_DATA_DIR>/service.json, and a command never does something
// other than asked. A service.json that is there but cannot be followed (empty or cut short, as a crash or a full disk
// left a file written in place; not an object; a field of the wrong type; no redis_url) is not taken for no file: with
// REDIS_URL unset the command is refused (exit 2) naming the file, what is wrong with it, and what to do (start the
// service again, which writes it anew, or set REDIS_URL), and nothing is written to the default Redis. With REDIS_URL
// set the command uses that Redis, as it always did.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const temp = tempDir('svcjson-unusable');
const prefix = `svcjson-unusable-${randomBytes(4).toString('hex')}`;

afterAll(async () => {
  temp.remove();
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

function dataDirWith(name: string, content: string): string {
  const dir = join(temp.dir, name);
  mkdirSync(dir, { mode: 0o700 });
  chmodSync(dir, 0o700);
  writeFileSync(join(dir, 'service.json'), content, { mode: 0o600 });
  return dir;
}

const env = (dir: string, redisUrl?: string) => ({ INTERLOCK_DATA_DIR: dir, INTERLOCK_KEY_PREFIX: prefix, REDIS_URL: redisUrl, STRIPE_SECRET_KEY: undefined, STRIPE_API_BASE: undefined });

async function grantsWritten(id: string): Promise<string[]> {
  const redis = new Redis(REDIS_URL);
  try {
    return await redis.keys(`${prefix}*approval:${id}`);
  } finally {
    await redis.quit();
  }
}

const grant = (id: string) => ['approvals', 'grant', '--id', id, '--approver', 'dana', '--cap-cents', '100', '--scope', 'payment:pi_svcjson'];

describe('a service.json that cannot be followed', { timeout: 60_000 }, () => {
  const cases = [
    ['empty', '', 'it is empty (0 bytes)'],
    ['cut-short', '{"pid": 1, "redis_url": "redis://127.0.0.1:1", "key_prefix": "x"', 'it is not JSON, or is cut short'],
    ['null', 'null', 'it holds null, not an object'],
    ['array', '[]', 'it holds an array, not an object'],
    ['redis-url-a-number', '{"pid": 1, "redis_url": 6379, "key_prefix": "x"}', 'its redis_url is a number, not a string'],
    ['no-redis-url', '{"tokens": {}}', 'it names no redis_url'],
  ] as const;
  for (const [name, content, why] of cases) {
    it(`${name}: approvals grant is refused naming the file and what is wrong, and nothing is written to another Redis`, async () => {
      const dir = dataDirWith(name, content);
      const id = `ap_svcjson_${name.replace(/-/g, '_')}`;
      const run = await runCli(grant(id), env(dir));
      expect(await grantsWritten(id), 'the grant went to the default Redis').toEqual([]);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(`${join(dir, 'service.json')} cannot be used: ${why}`);
      expect(run.stderr).toContain('Start the service again');
      expect(run.stderr).toContain('set REDIS_URL');
    });
  }

  it('a read is refused the same way, not told the file "names no Redis"', async () => {
    const dir = dataDirWith('read', '');
    const run = await runCli(['effect', 'show', '0'.repeat(64)], env(dir));
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`${join(dir, 'service.json')} cannot be used: it is empty`);
    expect(run.stderr).not.toContain('names no Redis');
  });

  it('with REDIS_URL set, the command uses that Redis, as it did', async () => {
    const dir = dataDirWith('redis-url-set', '');
    const id = 'ap_svcjson_redis_url_set';
    const run = await runCli(grant(id), env(dir, REDIS_URL));
    expect(run.code, run.stderr).toBe(0);
    expect(await grantsWritten(id)).toHaveLength(1);
  });
});
