// Rule: a failed case's open items are found through the case's own index (keys.inboxCaseFailures, kept by the scripts
// that open and close them), so opening a failure's item and closing a decided case's items take the same Redis
// commands whatever else the inbox holds; a failure's item supersedes the case's items of older failures only, never a
// newer one's; and closing one case's items leaves other cases' items and a person's dismissal as they were.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { caseEffectIdOf, caseFailureItem, caseFailureItemId } from '../../src/core/inbox.js';
import type { RedisClient } from '../../src/redis/client.js';
import { createInbox } from '../../src/redis/inbox.js';
import type { Journal } from '../../src/redis/journal.js';
import { createKeys } from '../../src/redis/keys.js';
import { removePrefixes, REDIS_URL } from '../support/harness.js';

const prefix = `t${randomBytes(6).toString('hex')}`;
const keys = createKeys(prefix);
const raw = new Redis(REDIS_URL);
let calls = 0;
/** The client, counting every call made on it (each one a command, a script or a pipeline). */
const counted = new Proxy(raw, {
  get(target, key, receiver) {
    const value = Reflect.get(target, key, receiver) as unknown;
    if (typeof value !== 'function') return value;
    return (...args: unknown[]) => {
      calls += 1;
      return (value as (...a: unknown[]) => unknown).apply(target, args);
    };
  },
}) as unknown as RedisClient;
// Case items have no chain: the inbox asks the journal only for the time.
let clock = 1_800_000_000_000;
const journal = { serverTime: async () => (clock += 1), partitionOf: async () => null, actedOn: async () => null, entries: async () => [] } as unknown as Journal;
const inbox = createInbox({ redis: counted, keys, journal, alerts: { resolve: async () => null } as never });

afterAll(async () => {
  await raw.quit();
  await removePrefixes([prefix]);
});

const failure = (caseId: string, failedAt: number) => caseFailureItem({ caseId, subject: 'payment:pi_x', approval: 'ap_1', code: 'decision_invalid', message: 'no tool call', failedAt, attempts: 1 });

/** `count` open items of other kinds, written to the index as the inbox writes them. */
async function seedOpen(count: number): Promise<void> {
  const pipeline = raw.pipeline();
  for (let i = 0; i < count; i += 1) {
    const effectId = randomBytes(32).toString('hex');
    const id = `exposure:${effectId}`;
    pipeline.hset(keys.inbox, id, JSON.stringify({ id, kind: 'exposure', effectId, subject: 'payment:pi_x', outcome: 'COMMITTED', happened: 'money out', centsAtStake: 100, currency: 'usd', changes: [], actions: ['dismiss'], detail: null, openedAt: 1_700_000_000_000 + i }));
    pipeline.zadd(keys.inboxOpen, 1_700_000_000_000 + i, id);
  }
  await pipeline.exec();
}

/** Redis calls to open a case's failure item (superseding its earlier one) and close its items once decided. */
async function callsFor(caseId: string): Promise<number> {
  await inbox.openCaseFailure(failure(caseId, 1_000));
  calls = 0;
  await inbox.openCaseFailure(failure(caseId, 2_000));
  await inbox.closeCaseFailures(caseEffectIdOf(caseId), 'decided');
  const made = calls;
  expect(await inbox.get(caseFailureItemId(caseId, 2_000))).toMatchObject({ status: 'closed', closure: { note: 'decided' } });
  expect(await inbox.get(caseFailureItemId(caseId, 1_000))).toMatchObject({ status: 'closed', closure: { note: `The case failed again; item ${caseFailureItemId(caseId, 2_000)} stands for its latest failure.` } });
  return made;
}

describe("a failed case's items, found through the case's own index", () => {
  it('cost the same Redis calls to open and close with 2,000 other items open as with none', async () => {
    const alone = await callsFor(`case-${randomBytes(4).toString('hex')}`);
    await seedOpen(2_000);
    const crowded = await callsFor(`case-${randomBytes(4).toString('hex')}`);
    expect(crowded).toBe(alone);
  });

  it("supersede only older failures' items, and close one case's items only, leaving a person's dismissal", async () => {
    const caseId = `case-${randomBytes(4).toString('hex')}`;
    const other = `case-${randomBytes(4).toString('hex')}`;
    const [t1, t2, t3] = [caseFailureItemId(caseId, 10_000), caseFailureItemId(caseId, 20_000), caseFailureItemId(caseId, 9_999)];
    await inbox.openCaseFailure(failure(other, 10_000));
    await inbox.openCaseFailure(failure(caseId, 10_000));
    expect(await inbox.openCaseFailure(failure(caseId, 20_000))).toMatchObject({ created: true, superseded: [t1] });
    // A failure older than the open one, opened late: it supersedes nothing (its opener closes it, reading the case).
    expect(await inbox.openCaseFailure(failure(caseId, 9_999))).toMatchObject({ created: true, superseded: [] });
    expect((await inbox.get(t2))?.status).toBe('open');
    expect(await inbox.closeCaseFailure(t3, 'the case failed again')).toBe(true);
    expect(await inbox.closeCaseFailure(t3, 'again')).toBe(false);
    expect((await inbox.get(t3))?.closure).toMatchObject({ by: { name: 'decisions', role: 'worker' }, note: 'the case failed again' });

    // A person dismisses the open one; the case, decided, has nothing left to close; the other case's item stays open.
    await inbox.act(t2, { action: 'dismiss', by: { name: 'lee', role: 'cli' }, note: 'filed again' });
    expect(await inbox.closeCaseFailures(caseEffectIdOf(caseId), 'decided')).toEqual([]);
    expect((await inbox.get(t2))?.closure).toMatchObject({ by: { name: 'lee' }, note: 'filed again' });
    expect((await inbox.get(caseFailureItemId(other, 10_000)))?.status).toBe('open');
    expect(await raw.exists(keys.inboxCaseFailures(caseEffectIdOf(caseId)))).toBe(0);
    expect(await inbox.closeCaseFailures(caseEffectIdOf(other), 'decided')).toEqual([caseFailureItemId(other, 10_000)]);
  });
});
