// While Redis is away a BullMQ worker reports every reconnect attempt as an error. queues/worker-errors.ts logs a
// worker's first error at once, then at most one line per interval, saying how many came since the last one logged.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { logWorkerErrors } from '../../queues/worker-errors.js';

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
