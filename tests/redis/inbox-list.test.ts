// Listing the escalation inbox while items open and close: a page is read in batches of the index, and each batch
// continues from the last item the one before it ended on, so what happens between batches never shifts a page.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboxItemId, type InboxItemDraft } from '../../src/core/inbox.js';
import { journalOf, openStores, type Stores } from '../../src/interlock.js';
import { createInbox } from '../../src/redis/inbox.js';
import { writerBetweenReads } from '../support/between-reads.js';
import { removePrefixes, testConfig, testKey } from '../support/harness.js';

const config = testConfig();
const redis = new Redis(config.redisUrl);
let stores: Stores;

beforeAll(async () => {
  stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key, redis });
});

afterAll(async () => {
  await stores.close();
  await redis.quit();
  await removePrefixes([config.keyPrefix]);
});

const draft = (effectId: string, subject: string): InboxItemDraft => ({
  id: inboxItemId('stale_premise', effectId),
  kind: 'stale_premise',
  effectId,
  subject,
  outcome: 'REFUSED:stale_premise',
  happened: 'A chargeback opened after the decision.',
  centsAtStake: 2_000,
  changes: [],
  actions: ['dismiss'],
  detail: null,
});

/** `count` open items on `subject`, oldest first (several opened in one millisecond share a score). */
async function openItems(count: number, subject: string): Promise<string[]> {
  const ids: string[] = [];
  for (let n = 0; n < count; n += 1) ids.push((await stores.inbox.open(draft(randomBytes(32).toString('hex'), subject))).item.id);
  return ids;
}

/** The store's inbox on a connection that runs `between` once, while a page is between its first and second batch. */
function inboxWithWriterBetweenBatches(between: () => Promise<unknown>) {
  const hooked = writerBetweenReads(redis, between);
  return { inbox: createInbox({ redis: hooked.redis, keys: stores.keys, journal: journalOf(stores), alerts: stores.alerts }), reads: hooked.reads };
}

describe('a page of the inbox read while items open and close', () => {
  it('lists every open item once when an item opens between the batches of one page (250 items, batches of 200)', async () => {
    const before = await openItems(250, 'payment:pi_opening');
    const listing = inboxWithWriterBetweenBatches(() => openItems(1, 'payment:pi_opening'));
    const page = await listing.inbox.list({ status: 'open', subject: 'payment:pi_opening' }, 1_000);
    expect(listing.reads()).toBeGreaterThanOrEqual(2);
    const ids = page.data.map((item) => item.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.filter((id) => before.includes(id)).sort()).toEqual([...before].sort());
  });

  it('passes over no open item when an item already listed closes between the batches of one page', async () => {
    const before = await openItems(250, 'payment:pi_closing');
    const newest = before.at(-1);
    if (newest === undefined) throw new Error('250 items were opened');
    // The newest item, in the first batch, leaves the open index (as close-inbox-3 does when a person acts).
    const listing = inboxWithWriterBetweenBatches(() => redis.zrem(stores.keys.inboxOpen, newest));
    const page = await listing.inbox.list({ status: 'open', subject: 'payment:pi_closing' }, 1_000);
    expect(listing.reads()).toBeGreaterThanOrEqual(2);
    const ids = page.data.map((item) => item.id);
    expect(new Set(ids).size).toBe(ids.length);
    // The newest was listed by the first batch, before it closed; the 249 older ones by what followed.
    expect(ids.sort()).toEqual([...before].sort());
  });
});

describe('where a page ends', () => {
  it('says there is more only when the index goes on: a page filled by the last of a full batch (200 items) ends the listing', async () => {
    const own = await openStores(testConfig(), { logger: pino({ level: 'silent' }), signingKey: testKey().key, redis });
    try {
      const open = (count: number) => Promise.all(Array.from({ length: count }, () => own.inbox.open(draft(randomBytes(32).toString('hex'), 'payment:pi_page_end'))));
      await open(200);
      const whole = await own.inbox.list({ status: 'open' }, 200);
      expect(whole.data).toHaveLength(200);
      expect(whole).toMatchObject({ hasMore: false, next: null });
      await open(1);
      const first = await own.inbox.list({ status: 'open' }, 200);
      expect(first.hasMore).toBe(true);
      const rest = await own.inbox.list({ status: 'open' }, 200, first.next ?? undefined);
      expect(rest.data).toHaveLength(1);
      expect(rest).toMatchObject({ hasMore: false, next: null });
    } finally {
      await own.close();
      await removePrefixes([own.config.keyPrefix]);
    }
  });
});
