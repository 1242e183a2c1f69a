// Many callers waiting on one queue's job events at once (`POST /v1/refunds?wait=30` from 64 clients): each wait
// holds a pair of listeners on the shared event stream while it waits and takes them off when it ends. Node warns
// past ten listeners with a line on stderr, among the service's JSON logs; so many waits are the stream's purpose,
// not a leak, and none is left behind.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobEvents, waitForJob, type JobEvents } from '../../queues/job-events.js';
import { openStores, type Stores } from '../../src/interlock.js';
import { testConfig, testKey } from '../support/harness.js';

let stores: Stores;
let events: JobEvents;
beforeAll(async () => {
  stores = await openStores(testConfig(), { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  events = jobEvents(stores, stores.queues.effects);
});
afterAll(async () => {
  await events.close();
  await stores.close();
});

describe('waiting on job events', () => {
  it('forty waits at once raise no listener warning and leave no listener behind', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const answers = await Promise.all(Array.from({ length: 40 }, () => waitForJob(events, { ours: () => false, timeoutMs: 100, settled: async () => null, answer: (finish) => finish.kind })));
      expect(answers.every((answer) => answer === 'timeout')).toBe(true);
      await new Promise((wait) => setImmediate(wait));
      expect(warnings).not.toContain('MaxListenersExceededWarning');
      const stream = await events.stream();
      expect([stream.listenerCount('completed'), stream.listenerCount('failed')]).toEqual([0, 0]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
