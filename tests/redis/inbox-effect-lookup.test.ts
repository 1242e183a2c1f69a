// Rule: GET /v1/inbox?effect=<id> (inbox.list with an effect) looks the effect's open items up by their ids (each
// `<kind>:<effect id>`, and the failed case's open items through the case's own index), in the open index's order:
// the same items, order, pages and has_more as a walk of the open index, at a cost that does not grow with the inbox.
// It used to walk the open index, reading every item (up to 5,000) to find the effect's few. A listing by kind reads
// no item of another kind either: an item's id names its kind.
import { randomBytes } from 'node:crypto';
import { Redis, type Command } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caseEffectIdOf, caseFailureItem, inboxItemId, type EffectInboxKind, type InboxItemDraft } from '../../src/core/inbox.js';
import type { RedisClient } from '../../src/redis/client.js';
import { createInbox, type InboxPage } from '../../src/redis/inbox.js';
import type { Journal } from '../../src/redis/journal.js';
import { createKeys } from '../../src/redis/keys.js';
import { removePrefixes, REDIS_URL } from '../support/harness.js';

const prefix = `t${randomBytes(6).toString('hex')}`;
const keys = createKeys(prefix);
const redis = new Redis(REDIS_URL);
// The items' effects have no chain here: the inbox asks the journal only for the time and finds no partition.
let clock = 1_800_000_000_000;
const journal = { serverTime: async () => (clock += 1), partitionOf: async () => null, actedOn: async () => null, entries: async () => [] } as unknown as Journal;
const inbox = createInbox({ redis: redis as unknown as RedisClient, keys, journal, alerts: { resolve: async () => null } as never });

/** What the listings read: open-index members walked (ZREVRANGEBYSCORE replies) and items read (HMGET fields of the items hash). */
const read = { members: 0, items: 0 };
const send = redis.sendCommand.bind(redis);
redis.sendCommand = ((command: Command, ...rest: unknown[]) => {
  const { name, args } = command as unknown as { name: string; args: unknown[] };
  if (name === 'zrevrangebyscore' && args[0] === keys.inboxOpen) {
    void (command as unknown as { promise: Promise<unknown> }).promise.then(
      (reply) => {
        if (Array.isArray(reply)) read.members += args.includes('WITHSCORES') ? reply.length / 2 : reply.length;
      },
      () => undefined,
    );
  }
  if (name === 'hmget' && args[0] === keys.inbox) read.items += args.length - 1;
  return (send as (...all: unknown[]) => unknown)(command, ...rest);
}) as Redis['sendCommand'];

afterAll(async () => {
  await redis.quit();
  await removePrefixes([prefix]);
});

const draft = (kind: EffectInboxKind, effectId: string): InboxItemDraft => ({ id: inboxItemId(kind, effectId), kind, effectId, subject: 'payment:pi_lookup', outcome: null, happened: 'h', centsAtStake: 100, changes: [], actions: ['dismiss'], detail: null });

// The case's effect id: its failures' items and, once a later submission proposed under it, the effect's own items.
const caseId = `case-${randomBytes(4).toString('hex')}`;
const effect = caseEffectIdOf(caseId);
const at = 1_800_000_500_000;

beforeAll(async () => {
  // 600 open items of other effects, older and newer than the effect's, some in the effect's milliseconds.
  for (let n = 0; n < 600; n += 1) {
    const other = randomBytes(32).toString('hex');
    await inbox.open(draft(n % 2 === 0 ? 'ambiguous' : 'stale_premise', other));
    await redis.zadd(keys.inboxOpen, 'XX', at - 300 + n, inboxItemId(n % 2 === 0 ? 'ambiguous' : 'stale_premise', other));
  }
  for (const kind of ['ambiguous', 'stale_premise', 'exposure', 'model_deviated'] as const) await inbox.open(draft(kind, effect));
  await inbox.openCaseFailure(caseFailureItem({ caseId, subject: 'payment:pi_lookup', approval: 'ap_1', code: 'decision_invalid', message: 'no tool call', failedAt: at - 50, attempts: 1 }));
  // Where each stands in the open index: three in one millisecond (listed in reverse byte order), one older, one newer.
  const scores: [number, string][] = [
    [at + 10, inboxItemId('exposure', effect)],
    [at, inboxItemId('ambiguous', effect)],
    [at, inboxItemId('stale_premise', effect)],
    [at, `case_failed:${effect}:${at - 50}`],
    [at - 200, inboxItemId('model_deviated', effect)],
  ];
  for (const [score, id] of scores) await redis.zadd(keys.inboxOpen, 'XX', score, id);
});

/** Every page of a listing of `limit` items, as ids, has_more and next. */
async function pages(filter: Parameters<typeof inbox.list>[0], limit: number): Promise<{ ids: string[]; hasMore: boolean; next: string | null }[]> {
  const found: { ids: string[]; hasMore: boolean; next: string | null }[] = [];
  let page: InboxPage | null = null;
  do {
    page = await inbox.list(filter, limit, page?.next ?? undefined);
    found.push({ ids: page.data.map((item) => item.id), hasMore: page.hasMore, next: page.next });
  } while (page.next !== null);
  return found;
}

describe("an effect's open items", () => {
  it('are listed newest first (one millisecond in reverse byte order), in pages whose has_more and next are those of the walk', async () => {
    const [exposure, ambiguous, stale, failed, deviated] = [inboxItemId('exposure', effect), inboxItemId('ambiguous', effect), inboxItemId('stale_premise', effect), `case_failed:${effect}:${at - 50}`, inboxItemId('model_deviated', effect)];
    expect(await pages({ status: 'open', effect }, 2)).toEqual([
      { ids: [exposure, stale], hasMore: true, next: `${at}.${stale}` },
      { ids: [failed, ambiguous], hasMore: true, next: `${at}.${ambiguous}` },
      { ids: [deviated], hasMore: false, next: null },
    ]);
    expect(await pages({ status: 'open', effect }, 5)).toEqual([{ ids: [exposure, stale, failed, ambiguous, deviated], hasMore: false, next: null }]);
    // With a kind, that kind's item only: the failed case's, or one of the effect's.
    expect(await pages({ status: 'open', effect, kind: 'case_failed' }, 2)).toEqual([{ ids: [failed], hasMore: false, next: null }]);
    expect(await pages({ status: 'open', effect, kind: 'model_deviated' }, 1)).toEqual([{ ids: [deviated], hasMore: false, next: null }]);
    // A cursor from a listing of the whole inbox means the same: what follows it in the index.
    expect((await inbox.list({ status: 'open', effect }, 10, `${at}.${failed}`)).data.map((item) => item.id)).toEqual([ambiguous, deviated]);
  });

  it('are looked up by id: no member of the open index is walked, and no item of another effect is read', async () => {
    read.members = 0;
    read.items = 0;
    const page = await inbox.list({ status: 'open', effect }, 10);
    expect(page.data).toHaveLength(5);
    expect(read).toEqual({ members: 0, items: 5 });
  });

  it('a listing by kind reads the items of that kind only, walking the index as before', async () => {
    read.members = 0;
    read.items = 0;
    const page = await inbox.list({ status: 'open', kind: 'model_deviated' }, 10);
    expect(page.data.map((item) => item.id)).toEqual([inboxItemId('model_deviated', effect)]);
    expect(read.members).toBeGreaterThanOrEqual(605);
    expect(read.items).toBe(1);
  });
});
