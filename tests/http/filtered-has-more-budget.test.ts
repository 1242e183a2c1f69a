// Rule: a filtered page that fills and then runs out of its scan budget (5,000 index entries, README) looking for one
// more match still says `has_more: true`, with the position where the page ended: what lies past the budget is not
// known yet, and the pages from there find the older match and end with `has_more: false`.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { SCAN_BUDGET } from '../../webhooks/api/listing.js';
import { inboxSuite } from './inbox-items.js';
import { bearer, TOKENS, uid } from './rig.js';

const { rig, make } = inboxSuite();

/** A few milliseconds, so what is recorded next is bound (or opened) after what the index holds now. */
const later = () => new Promise((resolve) => setTimeout(resolve, 5));

type Page = { data: { id: string }[]; has_more: boolean; next_starting_after: string | null };

/** Every page of `path` from the first, each `limit` long: what each held and said. */
async function everyPage(path: string, token: string, limit: number): Promise<{ ids: string[]; has_more: boolean; next: string | null }[]> {
  const pages: { ids: string[]; has_more: boolean; next: string | null }[] = [];
  let after = '';
  for (let n = 0; n < 10; n += 1) {
    const answer = await request(rig.app).get(`${path}&limit=${limit}${after}`).set(bearer(token));
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const page = answer.body as Page;
    pages.push({ ids: page.data.map((element) => element.id), has_more: page.has_more, next: page.next_starting_after });
    if (!page.has_more) return pages;
    after = `&starting_after=${page.next_starting_after}`;
  }
  throw new Error(`${path} did not end in 10 pages`);
}

describe('a filtered page whose one more match lies past the scan budget', () => {
  it('GET /v1/effects?subject= says has_more: true from where the page ended, and the pages after find the older effect', async () => {
    const mine = `pi_${uid()}`;
    const older = await make.proposed(mine);
    const boundAt = Number(await rig.redis.zscore(rig.stores.keys.effectsByTime, older));
    // SCAN_BUDGET effects of another payment between the two: only their index entries are read.
    const pipeline = rig.redis.pipeline();
    for (let n = 0; n < SCAN_BUDGET; n += 1) {
      const other = randomBytes(32).toString('hex');
      pipeline.zadd(rig.stores.keys.effectsByTime, boundAt + 1, other);
      pipeline.hset(rig.stores.keys.effectPartitions, other, 'payment:pi_someoneelse');
    }
    await pipeline.exec();
    await later();
    const newer = await make.proposed(mine);
    const pages = await everyPage(`/v1/effects?subject=payment:${mine}`, TOKENS.auditor, 1);
    expect(pages[0]).toEqual({ ids: [newer], has_more: true, next: `${await rig.redis.zscore(rig.stores.keys.effectsByTime, newer)}.${newer}` });
    // The first page spent its budget looking past its effect, the second spends its own on the rest of the others.
    expect(pages.map((page) => page.ids)).toEqual([[newer], [], [older]]);
    expect(pages.at(-1)).toMatchObject({ has_more: false, next: null });
  });

  it('GET /v1/inbox?subject= says has_more: true from where the page ended, and the pages after find the older item', async () => {
    const mine = `pi_${uid()}`;
    const older = await make.staleOn(mine);
    const openedAt = Number(await rig.redis.zscore(rig.stores.keys.inboxOpen, older.item));
    // SCAN_BUDGET open items of another payment between the two (the inbox's budget is the listing's).
    const pipeline = rig.redis.pipeline();
    for (let n = 0; n < SCAN_BUDGET; n += 1) {
      const effectId = randomBytes(32).toString('hex');
      const id = `stale_premise:${effectId}`;
      const item = { id, kind: 'stale_premise', effectId, subject: 'payment:pi_someoneelse', outcome: 'REFUSED:stale_premise', happened: 'A chargeback opened after the decision.', centsAtStake: 2_000, changes: [], actions: ['dismiss'], detail: null, openedAt: openedAt + 1 };
      pipeline.hset(rig.stores.keys.inbox, id, JSON.stringify(item));
      pipeline.zadd(rig.stores.keys.inboxOpen, openedAt + 1, id);
    }
    await pipeline.exec();
    await later();
    const newer = await make.staleOn(mine);
    const pages = await everyPage(`/v1/inbox?subject=payment:${mine}`, TOKENS.approver, 1);
    expect(pages[0]).toEqual({ ids: [newer.item], has_more: true, next: `${await rig.redis.zscore(rig.stores.keys.inboxOpen, newer.item)}.${newer.item}` });
    expect(pages.map((page) => page.ids)).toEqual([[newer.item], [], [older.item]]);
    expect(pages.at(-1)).toMatchObject({ has_more: false, next: null });
  });
});
