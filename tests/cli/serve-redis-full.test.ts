// Rule: a Redis at its memory limit (noeviction) is an outage, not a crash of the start (README "Retention", "Redis"):
// a process restarted then needs no write to start, so it starts, serves reads and its /readyz answers 503 (the
// deployment marker is read, and written only when Redis has none); a start that truly needs a write Redis refuses
// (the deployment's first marker, a worker's first heartbeat) exits 2 saying Redis is full, how full, and what to raise,
// never with Redis's bare "OOM command not allowed" line.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeys } from '../../src/redis/keys.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { REPO, runCli, tempDir } from './run-cli.js';

const PREFIX = 'servefull';
const temp = tempDir('serve-redis-full');
let redis: PrivateRedis;
let admin: Redis;

beforeAll(async () => {
  redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--save', '']);
  admin = new Redis(redis.url);
  // A journal that filled Redis to its limit: 2 MB of data, then the limit set under it.
  await admin.eval("for i=1,20000 do redis.call('set','fill:'..i,string.rep('x',100)) end return 1", 0);
});

afterAll(async () => {
  admin.disconnect();
  await redis.stop();
  temp.remove();
});

const env = (extra: Record<string, string> = {}) => ({
  REDIS_URL: redis.url,
  INTERLOCK_KEY_PREFIX: PREFIX,
  INTERLOCK_DATA_DIR: join(temp.dir, 'data'),
  INTERLOCK_PORT: '0',
  STRIPE_SECRET_KEY: 'sk_test_redisfull',
  STRIPE_API_BASE: 'http://127.0.0.1:1',
  ...extra,
});

/** Starts serve, waits for its "is running" lines (or its exit), reads its metrics listener's /readyz, then stops it. */
function serveAndProbe(roles: string): Promise<{ running: boolean; code: number | null; stderr: string; readyz: { status: number; body: string } | null }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(REPO, 'bin', 'interlock.js'), 'serve', '--roles', roles], { cwd: REPO, env: { ...process.env, INTERLOCK_LOG_LEVEL: 'error', INTERLOCK_SIGNING_KEY_FILE: '', INTERLOCK_METRICS_ADDR: '127.0.0.1:0', ...env() }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let readyz: { status: number; body: string } | null = null;
    let probing = false;
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      const metrics = /Metrics\s+(http:\/\/\S+)\/metrics/.exec(stdout)?.[1];
      if (metrics === undefined || probing) return;
      probing = true;
      void fetch(`${metrics}/readyz`)
        .then(async (response) => {
          readyz = { status: response.status, body: await response.text() };
        })
        .finally(() => child.kill('SIGTERM'));
    });
    child.on('exit', (code) => resolve({ running: stdout.includes('is running'), code, stderr, readyz }));
  });
}

describe('serve on a Redis at its memory limit', { timeout: 60_000 }, () => {
  it("a deployment's first start, which must write its marker: exits 2 saying Redis is full, how full, and to raise maxmemory", async () => {
    await admin.config('SET', 'maxmemory', '1mb');
    try {
      const run = await runCli(['serve', '--roles', 'api'], env(), { timeoutMs: 40_000 });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(/Redis is full \(used \S+ of maxmemory 1\.00M\): it refused to write the deployment marker/);
      expect(run.stderr).toContain('INTERLOCK_REDIS_MAXMEMORY');
      expect(run.stderr).toContain('"Retention"');
      expect(run.stderr).not.toMatch(/^OOM command not allowed/m);
    } finally {
      await admin.config('SET', 'maxmemory', '0');
    }
  });

  describe('once the deployment has its marker', () => {
    beforeAll(async () => {
      await admin.set(createKeys(PREFIX).deployment, 'marker-of-an-earlier-start');
      await admin.config('SET', 'maxmemory', '1mb');
    });
    afterAll(async () => {
      await admin.config('SET', 'maxmemory', '0');
    });

    it('a restarted api process starts and its /readyz answers 503, Redis refusing writes', async () => {
      const run = await serveAndProbe('api');
      expect(run.running, run.stderr).toBe(true);
      expect(run.readyz?.status, run.readyz?.body).toBe(503);
      expect(run.readyz?.body).toContain('redis_writable');
      // The marker was read, not written again.
      expect(await admin.get(createKeys(PREFIX).deployment)).toBe('marker-of-an-earlier-start');
    });

    it('a restarted worker, which must beat before it takes a job: exits 2 saying Redis is full, not the bare OOM line', async () => {
      const run = await runCli(['serve', '--roles', 'worker'], env(), { timeoutMs: 40_000 });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(/Redis is full \(used \S+ of maxmemory 1\.00M\): it refused to write this worker's heartbeat/);
      expect(run.stderr).toContain('INTERLOCK_REDIS_MAXMEMORY');
      expect(run.stderr).not.toMatch(/^OOM command not allowed/m);
    });
  });
});
