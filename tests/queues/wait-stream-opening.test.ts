// Rule: a wait on a queue's jobs is bounded by its own timeout and its caller's hang-up from the moment it is asked,
// the opening of the queue's event stream included: the first wait of a process opens the stream on a connection that
// waits out a Redis outage however long it lasts, and a wait that met an outage there ends as a timeout when its time
// runs out, or at once when its caller leaves, instead of lasting as long as the outage.
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobEvents, waitForJob, type JobEvents } from '../../queues/job-events.js';
import { openStores, type Stores } from '../../src/interlock.js';
import { REDIS_URL, testConfig, testKey } from '../support/harness.js';
import { startRedisCutProxy, type RedisCutProxy } from '../support/redis-cut-proxy.js';

let proxy: RedisCutProxy;
let stores: Stores;
let events: JobEvents;

beforeAll(async () => {
  const url = new URL(REDIS_URL);
  proxy = await startRedisCutProxy({ host: url.hostname, port: Number(url.port || 6379) });
  stores = await openStores(testConfig({ redisUrl: proxy.url }), { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  // Redis goes away before any wait has opened the stream.
  proxy.cut();
  events = jobEvents(stores, stores.queues.effects);
});
afterAll(async () => {
  proxy.heal();
  await events.close();
  await stores.close();
  await proxy.close();
});

/** What `wait` came to, or 'still waiting' once `ms` passed (a wait lasting as long as the outage). */
async function within<T>(wait: Promise<T>, ms = 15_000): Promise<T | string> {
  return Promise.race([wait.then((value) => value, (error: unknown) => `rejected: ${error instanceof Error ? error.message : String(error)}`), sleep(ms).then(() => 'still waiting')]);
}

describe('a wait whose event stream cannot open (Redis away)', () => {
  it('ends as a timeout when its time runs out, the store not asked', async () => {
    let asked = 0;
    const answer = await within(
      waitForJob(events, {
        ours: () => true,
        timeoutMs: 300,
        settled: async () => {
          asked += 1;
          return null;
        },
        answer: (finish) => finish.kind,
      }),
    );
    expect(answer).toBe('timeout');
    expect(asked).toBe(0);
  });

  it("ends at once, rejecting with the signal's reason, when its caller hangs up", async () => {
    const caller = new AbortController();
    const waiting = within(waitForJob(events, { ours: () => true, timeoutMs: 60_000, settled: async () => null, answer: (finish) => finish.kind, signal: caller.signal }));
    await sleep(100);
    caller.abort(new Error('the caller hung up'));
    expect(await waiting).toBe('rejected: the caller hung up');
  });
});
