// Rule: `npm start` stopped cleanly while a `serve --roles worker` that joined it through service.json still runs
// leaves its private Redis running for that worker, in one warning line naming its pid and port, that the next
// `npm start` takes it over and how to stop it by hand; the next `npm start` then serves on that same Redis (same pid,
// same address), not on a second one, and its own stop, once the worker has gone, stops it.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { processRuns } from '../../src/redis/private-server.js';
import { spawnWorker } from '../pipeline/pipeline-support.js';

const data = mkdtempSync(join(tmpdir(), 'interlock-joined-stop-'));
const redisPid = () => Number(readFileSync(join(data, 'redis', 'redis.pid'), 'utf8'));
const redisUrl = () => (JSON.parse(readFileSync(join(data, 'service.json'), 'utf8')) as { redis_url: string }).redis_url;

afterAll(() => {
  try {
    process.kill(redisPid(), 'SIGKILL');
  } catch {
    // Gone.
  }
  rmSync(data, { recursive: true, force: true });
});

it('the owner stopped under a joined worker leaves its Redis to it, and the next start takes it over', { timeout: 120_000 }, async () => {
  // A Stripe nobody answers at: nothing here sends.
  // REDIS_URL blank (the runner may export one, as CI does): the owner starts its private Redis, the worker follows service.json.
  const env = { REDIS_URL: '', INTERLOCK_DATA_DIR: data, INTERLOCK_PORT: '0', STRIPE_SECRET_KEY: 'sk_test_joined', STRIPE_API_BASE: 'http://127.0.0.1:9' };
  const owner = spawnWorker(env, ['serve', '--roles', 'api']);
  let worker: ReturnType<typeof spawnWorker> | null = null;
  let next: ReturnType<typeof spawnWorker> | null = null;
  try {
    await owner.ready;
    const pid = redisPid();
    const url = redisUrl();
    // It joins the running service through service.json: no REDIS_URL.
    worker = spawnWorker({ REDIS_URL: '', INTERLOCK_DATA_DIR: data, STRIPE_SECRET_KEY: 'sk_test_joined', STRIPE_API_BASE: 'http://127.0.0.1:9' }, ['serve', '--roles', 'worker']);
    await worker.ready;
    owner.child.kill('SIGINT');
    expect((await owner.exited).code).toBe(0);
    expect(processRuns(pid)).toBe(true);
    const left = owner.logs().split('\n').filter((line) => line.includes('was left running'));
    expect(left).toHaveLength(1);
    expect(left[0]).toContain(`the private Redis (pid ${pid}, port ${new URL(url).port})`);
    expect(left[0]).toContain('The next `npm start` on this data directory takes it over');
    expect(left[0]).toContain(`\`kill ${pid}\``);
    expect(worker.logs()).not.toMatch(/exited .* while the service ran|ECONNREFUSED/);

    next = spawnWorker(env, ['serve', '--roles', 'api']);
    await next.ready;
    expect(redisPid()).toBe(pid);
    expect(redisUrl()).toBe(url);

    await worker.stop();
    await next.stop();
    expect((await next.exited).code).toBe(0);
    expect(processRuns(pid)).toBe(false);
  } finally {
    await worker?.stop(2_000);
    await owner.stop(2_000);
    await next?.stop(2_000);
  }
});
