// While Redis is away a BullMQ worker reports every reconnect attempt as an error. queues/worker-errors.ts logs a
// worker's first error at once, then at most one line per interval, saying how many came since the last one logged.
// A whole service through an outage writes nothing but those JSON lines: its queues' errors are logged the same way.
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { logWorkerErrors } from '../../queues/worker-errors.js';
import { spawnWorker } from '../pipeline/pipeline-support.js';
import { startPrivateRedis } from '../support/private-redis.js';

/** A logger writing each line into `lines`, and a clock the test moves. */
function setup() {
  const lines: { msg: string; notLogged?: number; err?: { message: string } }[] = [];
  const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
  const clock = { now: 1_000_000 };
  const worker = new EventEmitter();
  logWorkerErrors(worker, logger, 'effects worker error', { everyMs: 10_000, now: () => clock.now });
  return { lines, clock, worker };
}

describe('worker errors while Redis is away', () => {
  it('logs the first at once, then one line per 10 s counting the ones not logged', () => {
    const { lines, clock, worker } = setup();
    worker.emit('error', new Error('connect ECONNREFUSED 127.0.0.1:6379'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: 'effects worker error', err: { message: 'connect ECONNREFUSED 127.0.0.1:6379' } });
    expect(lines[0]?.notLogged).toBeUndefined();
    // A reconnect attempt a second for 9 s: nothing more.
    for (let second = 1; second <= 9; second += 1) {
      clock.now += 1_000;
      worker.emit('error', new Error('connect ECONNREFUSED 127.0.0.1:6379'));
    }
    expect(lines).toHaveLength(1);
    clock.now += 1_000;
    worker.emit('error', new Error('Connection is closed.'));
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ msg: 'effects worker error (9 more since the last logged)', notLogged: 9, err: { message: 'Connection is closed.' } });
  });

  it('an error long after the last is logged at once, with no count', () => {
    const { lines, clock, worker } = setup();
    worker.emit('error', new Error('first'));
    clock.now += 60_000;
    worker.emit('error', new Error('later'));
    expect(lines.map((line) => [line.msg, line.notLogged])).toEqual([['effects worker error', undefined], ['effects worker error', undefined]]);
  });
});

describe('a service whose Redis goes away', () => {
  it('writes only structured log lines to stderr: every queue it opens logs its reconnect errors as the workers do', async () => {
    const redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
    const data = mkdtempSync(join(tmpdir(), 'interlock-outage-logs-'));
    const service = spawnWorker({
      REDIS_URL: redis.url,
      INTERLOCK_KEY_PREFIX: `outage-${randomBytes(4).toString('hex')}`,
      INTERLOCK_DATA_DIR: data,
      STRIPE_SECRET_KEY: 'sk_test_outagelogs',
      STRIPE_API_BASE: 'http://127.0.0.1:9',
      STRIPE_WEBHOOK_SECRET: 'whsec_outageLogsTestSecret0123456789',
    }, ['serve', '--port', '0']);
    let stderr = '';
    service.child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      await service.ready;
      await redis.kill('SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      await redis.restart();
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const lines = stderr.split('\n').filter((line) => line.trim() !== '');
      expect(lines.some((line) => line.includes('ECONNREFUSED'))).toBe(true);
      expect(lines.filter((line) => !line.startsWith('{')).slice(0, 5)).toEqual([]);
    } finally {
      await service.stop();
      await redis.stop();
      rmSync(data, { recursive: true, force: true });
    }
  }, 90_000);
});
