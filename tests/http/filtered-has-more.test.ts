// Rule: with a filter set, a list page's `has_more` is true only when one more element that passes the filter follows
// the page (README: pass next_starting_after back "and no effect is repeated or skipped"), never because older
// elements of another subject, state, outcome or kind follow it in the index: the page after such a page would be
// empty. The one exception is the documented scan budget: a page that runs out of it looking says `has_more: true`
// with a position to go on from (tests/http/filtered-has-more-budget.test.ts).
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { inboxSuite } from './inbox-items.js';
import { bearer, TOKENS, uid } from './rig.js';

const { rig, make } = inboxSuite();

/** A few milliseconds, so the next effect or item is bound (or opened) after the one before: newest first is its order. */
const later = () => new Promise((resolve) => setTimeout(resolve, 5));

async function effectsPage(query: string) {
  const page = await request(rig.app).get(`/v1/effects?${query}`).set(bearer(TOKENS.auditor));
  expect(page.status, JSON.stringify(page.body)).toBe(200);
  return page.body as { data: { id: string }[]; has_more: boolean; next_starting_after: string | null };
}

async function inboxPage(query: string) {
  const page = await request(rig.app).get(`/v1/inbox?${query}`).set(bearer(TOKENS.approver));
  expect(page.status, JSON.stringify(page.body)).toBe(200);
  return page.body as { data: { id: string }[]; has_more: boolean; next_starting_after: string | null };
}

describe('GET /v1/effects with a filter', () => {
  it('?subject= holding every effect of the payment says has_more: false though older effects of other payments follow', async () => {
    const mine = `pi_${uid()}`;
    await make.proposed(`pi_${uid()}`);
    await later();
    const older = await make.proposed(mine);
    await later();
    const newer = await make.proposed(mine);
    const page = await effectsPage(`subject=payment:${mine}&limit=2`);
    expect({ ids: page.data.map((effect) => effect.id), has_more: page.has_more, next: page.next_starting_after }).toEqual({ ids: [newer, older], has_more: false, next: null });
    // A page that holds one of the two says more, and the page it names holds the other.
    const first = await effectsPage(`subject=payment:${mine}&limit=1`);
    expect({ ids: first.data.map((effect) => effect.id), has_more: first.has_more }).toEqual({ ids: [newer], has_more: true });
    const second = await effectsPage(`subject=payment:${mine}&limit=1&starting_after=${first.next_starting_after}`);
    expect({ ids: second.data.map((effect) => effect.id), has_more: second.has_more, next: second.next_starting_after }).toEqual({ ids: [older], has_more: false, next: null });
  });

  it('?state= and ?outcome= holding every such effect say has_more: false though older effects in other states follow', async () => {
    const pi = `pi_${uid()}`;
    await make.proposed(`pi_${uid()}`);
    await later();
    const committed = await make.proposed(pi);
    expect(await make.submitLatest(committed)).toBe('COMMITTED');
    // This rig's only committed effect, and a proposed one older than it.
    for (const query of ['state=committed&limit=1', 'outcome=COMMITTED&limit=1', `state=committed&subject=payment:${pi}&limit=1`]) {
      const page = await effectsPage(query);
      expect({ query, ids: page.data.map((effect) => effect.id), has_more: page.has_more, next: page.next_starting_after }).toEqual({ query, ids: [committed], has_more: false, next: null });
    }
  });
});

describe('GET /v1/inbox with a filter', () => {
  it('?subject= holding every open item of the payment says has_more: false though older items of other payments follow', async () => {
    const mine = `pi_${uid()}`;
    await make.stale();
    await later();
    const older = await make.staleOn(mine);
    await later();
    const newer = await make.staleOn(mine);
    const page = await inboxPage(`subject=payment:${mine}&limit=2`);
    expect({ ids: page.data.map((item) => item.id), has_more: page.has_more, next: page.next_starting_after }).toEqual({ ids: [newer.item, older.item], has_more: false, next: null });
    const first = await inboxPage(`subject=payment:${mine}&limit=1`);
    expect({ ids: first.data.map((item) => item.id), has_more: first.has_more }).toEqual({ ids: [newer.item], has_more: true });
    const second = await inboxPage(`subject=payment:${mine}&limit=1&starting_after=${first.next_starting_after}`);
    expect({ ids: second.data.map((item) => item.id), has_more: second.has_more, next: second.next_starting_after }).toEqual({ ids: [older.item], has_more: false, next: null });
  });

  it('?kind= holding every open item of the kind says has_more: false though older items of other kinds follow', async () => {
    const stale = await make.stale();
    await later();
    const ambiguous = await make.ambiguous();
    const page = await inboxPage('kind=ambiguous&limit=1');
    expect({ ids: page.data.map((item) => item.id), has_more: page.has_more, next: page.next_starting_after }).toEqual({ ids: [ambiguous.item], has_more: false, next: null });
    expect((await inboxPage(`effect=${stale.effectId}&limit=1`)).has_more).toBe(false);
  });
});
