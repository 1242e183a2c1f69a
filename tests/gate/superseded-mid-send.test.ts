// Rule: a live worker aborts its sends in progress once its heartbeat key may be gone, and lives on; the send watchdog
// kills only a stalled event loop, or a target that cannot close its requests (README "The same watchdog ties each
// sender to its heartbeat"). The key may be gone at once, not only by lapsing: another process beats under the same
// worker id (the beat answers SUPERSEDED) or stop clears it, and the watchdog is then told a bound already past. The
// gate's fence counted to the old bound, so the watchdog SIGKILLed the process (serve: API, webhooks, facts) within
// its 20 ms tick, blaming a stalled event loop that was free. A bound that drops is told first to the heartbeat's
// onBoundDropped listeners, synchronously: the fence aborts the sends in progress before the watchdog learns it.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { createKeys } from '../../src/redis/keys.js';
import { createHeartbeat } from '../../src/redis/heartbeat.js';
import { closeConnection, createRedisClient } from '../../src/redis/client.js';
import { REDIS_URL, removePrefixes } from '../support/harness.js';

const prefixes: string[] = [];
afterAll(() => removePrefixes(prefixes));

it('a live sender superseded under its worker id mid-send aborts the send and lives on (not SIGKILLed)', async () => {
  const prefix = `t-sup-mid-send-${randomBytes(4).toString('hex')}`;
  prefixes.push(prefix);
  const workerId = 'sup-sender';
  const key = createKeys(prefix).heartbeat(workerId);
  const redis = new Redis(REDIS_URL);
  const child = spawn(process.execPath, ['--import', 'tsx', 'tests/gate/superseded-mid-send-sender.ts'], {
    env: { ...process.env, SUP_PREFIX: prefix, SUP_WORKER_ID: workerId, INTERLOCK_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let superseded = false;
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (superseded || !stdout.includes('sending\n')) return;
    superseded = true;
    // Another process takes the worker id: its nonce is in the key, so this sender's next beat answers SUPERSEDED.
    void redis.set(key, 'another-process-nonce', 'PX', 60_000);
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  await redis.quit();
  expect(superseded).toBe(true);
  expect({ code: exit.code, signal: exit.signal, stderr: stderr.slice(0, 600) }).toEqual({ code: 0, signal: null, stderr: '' });
  // Aborted (the target asked to close its requests), its outcome unknown, not landed after the 6 s send.
  expect(stdout).toMatch(/^answer \S+ aborts 1$/m);
  expect(stdout).toContain('survived');
}, 60_000);

it("a dropped bound is told to the heartbeat's listeners, synchronously and first, then to onAliveUntil", async () => {
  const prefix = `t-sup-drop-${randomBytes(4).toString('hex')}`;
  prefixes.push(prefix);
  const keys = createKeys(prefix);
  const redis = createRedisClient({ redisUrl: REDIS_URL, redisCluster: false });
  try {
    const told: string[] = [];
    const heartbeat = createHeartbeat({ redis, keys, workerId: 'W', nonce: 'boot-1', intervalMs: 60_000, ttlMs: 10_000, onAliveUntil: (at) => told.push(at > performance.now() ? 'alive ahead' : 'alive past') });
    heartbeat.onBoundDropped(() => told.push(`dropped, aliveFor ${heartbeat.aliveFor()}`));
    await heartbeat.beat();
    await heartbeat.beat();
    expect(told).toEqual(['alive ahead', 'alive ahead']);
    await redis.set(keys.heartbeat('W'), 'boot-other', 'PX', 60_000);
    await heartbeat.beat();
    expect(told).toEqual(['alive ahead', 'alive ahead', 'dropped, aliveFor 0', 'alive past']);
    await redis.del(keys.heartbeat('W'));
    await heartbeat.beat();
    told.length = 0;
    await heartbeat.stop({ clear: true });
    expect(told).toEqual(['dropped, aliveFor 0', 'alive past']);
  } finally {
    await closeConnection(redis);
  }
});
