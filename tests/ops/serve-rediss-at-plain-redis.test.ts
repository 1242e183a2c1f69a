// Rule: a start that cannot use REDIS_URL stops within about INTERLOCK_REDIS_COMMAND_TIMEOUT_MS, naming what is wrong.
// REDIS_URL=rediss://… at a Redis that speaks plain RESP (a scheme copied from a managed Redis) is a TLS handshake the
// server never answers: the start's cluster probe finds that out within the command timeout (checkClusterMode's
// noAnswer, src/redis/client.ts), so `serve` exits 2 then, saying the server accepted the connection but answered
// neither TLS nor a command and to use redis:// for a plain Redis. It used to throw that away and wait about 90 s
// (ioredis's connect timeout, times its retries) to say "connect ETIMEDOUT" with certificate advice: a firewall or a
// host that is down, to a reader, not the wrong scheme at a Redis that is there.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const ROOT = join(import.meta.dirname, '..', '..');
/** How long the test lets `serve` run before it kills it: far more than the 1 s command timeout it is given, far less than the 90 s it took. */
const GIVEN_MS = 20_000;

let redis: PrivateRedis;
let dir: string;

beforeAll(async () => {
  redis = await startPrivateRedis(['--save', '', '--appendonly', 'no']);
  dir = mkdtempSync(join(tmpdir(), 'serve-rediss-plain-'));
});

afterAll(async () => {
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('serve with rediss:// at a plain Redis exits 2 within its command timeout, saying the server answered no TLS and to use redis://', async () => {
  const tlsUrl = redis.url.replace(/^redis:/, 'rediss:');
  const result = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }>((resolve) => {
    let output = '';
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'interlock.js'), 'serve', '--roles', 'worker'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', HOME: dir, INTERLOCK_DATA_DIR: dir, REDIS_URL: tlsUrl, INTERLOCK_REDIS_COMMAND_TIMEOUT_MS: '1000', INTERLOCK_UNSAFE_DURABILITY: '1', INTERLOCK_KEY_PREFIX: `srp${randomBytes(4).toString('hex')}`, STRIPE_SECRET_KEY: 'sk_test_serveRedissPlain01', INTERLOCK_LOG_LEVEL: 'error' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const cut = setTimeout(() => child.kill('SIGKILL'), GIVEN_MS);
    child.on('exit', (code, signal) => {
      clearTimeout(cut);
      resolve({ code, signal, output });
    });
  });
  expect(result.signal, `still running after ${GIVEN_MS} ms: ${result.output}`).toBeNull();
  expect(result.code, result.output).toBe(2);
  expect(result.output).toContain(`Cannot reach Redis at ${tlsUrl} (Command timed out), so the service did not start.`);
  expect(result.output).toContain('accepted the connection but answered neither TLS nor a command within 1000 ms (INTERLOCK_REDIS_COMMAND_TIMEOUT_MS)');
  expect(result.output).toContain('If it is a plain Redis (without TLS), use redis:// in REDIS_URL.');
  expect(result.output).not.toContain('ETIMEDOUT');
}, 60_000);
