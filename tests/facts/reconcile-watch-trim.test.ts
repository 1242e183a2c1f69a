// The reconciler's watch list (`{~index}:watch`: late commits, and the effects of facts jobs that failed for good)
// must not grow for the life of the deployment. The rule: the end of a scheduled pass drops the entries older than
// any reconciliation can ask for (`interlock reconcile --since` takes at most LONGEST_RECONCILE_SINCE_MS, 400 days; a
// longer horizon keeps its own), and keeps every entry such a window still reaches.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReconciler } from '../../queues/facts.js';
import { LONGEST_RECONCILE_SINCE_MS } from '../../src/interlock.js';
import { createFacts, journalOf, openStores, type Stores } from '../../src/interlock.js';
import { testConfig, testKey } from '../support/harness.js';
import { runCli } from '../cli/run-cli.js';

const DAY_MS = 86_400_000;
const config = testConfig();
let stores: Stores;
let redis: Redis;

beforeAll(async () => {
  stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  redis = new Redis(config.redisUrl);
});

afterAll(async () => {
  const stale = await redis.keys(`${config.keyPrefix}:*`);
  if (stale.length > 0) await redis.del(...stale);
  await stores.close();
  await redis.quit();
});

const effectIds = (count: number) => Array.from({ length: count }, () => randomBytes(32).toString('hex'));

describe("the reconciler's watch list", () => {
  it("a scheduled pass drops the entries past the longest --since and keeps those it still reaches", async () => {
    const journal = journalOf(stores);
    const now = await journal.serverTime();
    const beyond = effectIds(5);
    const reached = effectIds(5);
    await journal.watchFrom(beyond, now - 401 * DAY_MS);
    await journal.watchFrom(reached, now - 30 * DAY_MS);
    const reconciler = startReconciler(stores, createFacts(stores, null), { intervalMs: 3_600_000, horizonMs: 3_600_000, atStart: false });
    try {
      expect((await reconciler.pass()).skipped).toBeNull();
    } finally {
      await reconciler.close();
    }
    const left = await redis.zrange(stores.keys.watch, '0', '-1');
    expect(left.filter((id) => beyond.includes(id)), 'entries 401 days old were kept: the list only grows').toEqual([]);
    // `interlock reconcile --since 30d` still needs these, though they lie far beyond the 1 h horizon.
    expect(left.filter((id) => reached.includes(id)).sort()).toEqual([...reached].sort());
  });

  it('a horizon longer than the longest --since keeps what it reaches', async () => {
    const journal = journalOf(stores);
    const now = await journal.serverTime();
    const old = effectIds(3);
    await journal.watchFrom(old, now - 450 * DAY_MS);
    const reconciler = startReconciler(stores, createFacts(stores, null), { intervalMs: 3_600_000, horizonMs: 500 * DAY_MS, atStart: false });
    try {
      await reconciler.pass();
    } finally {
      await reconciler.close();
    }
    expect((await redis.zmscore(stores.keys.watch, ...old)).every((score) => score !== null)).toBe(true);
  });

  it('`interlock reconcile` refuses a --since beyond what the watch list keeps, saying how far it reaches', async () => {
    const days = LONGEST_RECONCILE_SINCE_MS / DAY_MS;
    const run = await runCli(['reconcile', '--since', `${days + 1}d`], { REDIS_URL: config.redisUrl, INTERLOCK_KEY_PREFIX: config.keyPrefix });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`at most ${days}d`);
  });
});
