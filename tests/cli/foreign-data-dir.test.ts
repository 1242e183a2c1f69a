// Rule: the data directory holds the API tokens, the signing key and service.json, and commands follow service.json
// to a Redis, a key prefix and a signing key file. So `serve` refuses (exit 2, nothing started) a data directory that
// other users may write or that another user owns, and a command refuses to follow a service.json that is not only
// its user's (the file or its directory): whoever could write it would plant tokens, a key for the next start, or
// send the command's writes to their own Redis, signed with the key it names. A directory of this user's own group
// (a Kubernetes volume's fsGroup) is this user's, and the advice given works. The cases that give a path to another
// user run only as root.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { writableByOthers } from '../../src/files.js';

const REPO = join(import.meta.dirname, '..', '..');
const base = mkdtempSync(join(tmpdir(), 'interlock-foreign-dir-'));
const prefix = `foreign-dir-${process.pid}`;
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const root = process.getuid?.() === 0;
const NOBODY = 65534;

afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  rmSync(base, { recursive: true, force: true });
});

function run(args: string[], env: NodeJS.ProcessEnv, cwd = REPO) {
  const clean: NodeJS.ProcessEnv = { ...process.env, INTERLOCK_LOG_LEVEL: 'silent', ...env };
  for (const name of ['REDIS_URL', 'INTERLOCK_DATA_DIR', 'INTERLOCK_KEY_PREFIX', 'STRIPE_SECRET_KEY', 'STRIPE_API_BASE']) if (!(name in env)) delete clean[name];
  const result = spawnSync(process.execPath, [join(REPO, 'bin', 'interlock.js'), ...args], { cwd, env: clean, encoding: 'utf8', timeout: 30_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** `serve` on `dataDir`, which must be refused before anything starts (a port that nothing else uses, Redis given). */
function serveOn(dataDir: string) {
  return run(['serve'], { INTERLOCK_DATA_DIR: dataDir, REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', INTERLOCK_KEY_PREFIX: prefix, STRIPE_SECRET_KEY: 'sk_test_sandbox', STRIPE_API_BASE: 'http://127.0.0.1:1', STRIPE_WEBHOOK_SECRET: 'whsec_abcdefghijklmnop', INTERLOCK_UNSAFE_DURABILITY: '1', INTERLOCK_PORT: '0' });
}

function directory(name: string, mode: number): string {
  const path = join(base, name);
  mkdirSync(path);
  chmodSync(path, mode);
  return path;
}

describe('serve on a data directory that is not only its user’s', () => {
  it('refuses one every user may write, naming the mode and what to do, and writes nothing into it', () => {
    const dir = directory('open', 0o777);
    writeFileSync(join(dir, 'api-tokens'), 'mallory:operator:MalloryOperatorToken456789\n');
    const { status, output } = serveOn(dir);
    expect(status).toBe(2);
    expect(output).toContain(`The data directory ${dir} (INTERLOCK_DATA_DIR) cannot be used: every user of this machine may write it (mode 0777)`);
    expect(output).toContain(`chmod 700 ${dir}`);
    expect(output).not.toContain('is running');
    expect(readdirSync(dir)).toEqual(['api-tokens']);
  });

  it.skipIf(!root)('refuses one another user owns, or that a group this user is not in may write', () => {
    const theirs = directory('theirs', 0o755);
    chownSync(theirs, NOBODY, NOBODY);
    expect(serveOn(theirs).output).toContain(`it belongs to another user (uid ${NOBODY})`);
    const group = directory('group', 0o770);
    chownSync(group, 0, NOBODY);
    expect(serveOn(group).output).toContain(`the users of group ${NOBODY}, which this process is not in, may write it (mode 0770)`);
  });

  it('takes one of its own group (as a volume’s fsGroup gives) and one only it may write', () => {
    const group = directory('own-group', 0o770);
    chownSync(group, process.getuid?.() ?? 0, process.getegid?.() ?? 0);
    expect(writableByOthers(statSync(group))).toBeNull();
    expect(writableByOthers(statSync(directory('private', 0o700)))).toBeNull();
  });
});

describe('a command finding a service.json that is not only its user’s', () => {
  it('refuses to follow it (exit 2, saying why and what to set) and writes nothing to the Redis it names', async () => {
    const cwd = directory('checkout', 0o755);
    const data = join(cwd, '.data');
    mkdirSync(data);
    chmodSync(data, 0o777);
    writeFileSync(join(data, 'service.json'), JSON.stringify({ pid: 1, redis_url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', key_prefix: prefix }));
    const { status, output } = run(['approvals', 'grant', '--id', 'ap_foreign_probe', '--approver', 'ops@example.com', '--cap-cents', '5000', '--scope', 'payment:pi_foreign_probe'], {}, cwd);
    expect(status).toBe(2);
    expect(output).toContain(`${join('.data', 'service.json')} is not followed: its directory`);
    expect(output).toContain('every user of this machine may write it (mode 0777)');
    expect(output).toContain('Set INTERLOCK_DATA_DIR to the service');
    expect(await redis.keys(`${prefix}*`)).toEqual([]);
    // The advice works: a data directory of this user's own, with the Redis named, is used and that service.json is not.
    const own = directory('own-data', 0o700);
    const advised = run(['approvals', 'grant', '--id', 'ap_foreign_advised', '--approver', 'ops@example.com', '--cap-cents', '5000', '--scope', 'payment:pi_foreign_probe'], { INTERLOCK_DATA_DIR: own, REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', INTERLOCK_KEY_PREFIX: `${prefix}-advised` }, cwd);
    expect(advised.status, advised.output).toBe(0);
    expect(await redis.keys(`${prefix}-advised*`)).not.toEqual([]);
  });
});
