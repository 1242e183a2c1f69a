// Rule: a re-approval stands on the facts the person was shown. Every view of an item a re-approval is made from (GET
// /v1/inbox/:id, the listing, the item's page) carries the fingerprint of the facts it shows (facts_shown); the page's
// form always sends it back, the API takes it. When the item shows other facts by the click (someone else's refused
// re-approval brought it up to date after the person read it), the re-approval is refused 409 facts_changed and nothing
// is recorded. It used to be compared with the item as Redis held it at the click: a person clicking on the page they
// read before went through, on a second chargeback their page never showed.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { effectIdFor, reapprovalRequestId } from '../../src/interlock.js';
import { inboxSuite } from './inbox-items.js';
import { factsShownOnPage } from './page-facts-shown.js';
import { pageSession } from './page-sessions.js';
import { bearer, TOKENS } from './rig.js';

const { rig, make } = inboxSuite();

async function reapprovalRecorded(item: string): Promise<boolean> {
  return (await rig.stores.journal.partitionOf(effectIdFor({ requestId: reapprovalRequestId(item), effect: null }))) !== null;
}

/** A second chargeback arrives, and alex re-approves over the API naming no facts_shown: refused, the item brought up to date. */
async function refreshedByAnother(pi: string, item: string, approval: string): Promise<void> {
  rig.target.world.set(`payment:${pi}`, { chargebacks: ['du_opened', 'du_second'], refunded_by_others: 0 });
  const alex = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.approver)).send({ approval, note: 'refund anyway' });
  expect({ status: alex.status, code: alex.body.error?.code }).toEqual({ status: 409, code: 'facts_changed' });
}

describe('a re-approval made from a view of the item read before it was brought up to date', () => {
  it('is refused from the page that showed the older facts; the page drawn with the refusal re-approves on the new ones', async () => {
    const { pi, item } = await make.stale();
    const approval = await make.grant(pi);
    const dana = await pageSession(rig.app, TOKENS.danaApprover);
    const read = await request(rig.app).get(`/ui/inbox/${item}`).set('Cookie', dana.cookie);
    expect(read.text).not.toContain('du_second');
    const shown = await factsShownOnPage(rig.app, item, dana.cookie);

    await refreshedByAnother(pi, item, approval);
    const form = (factsShown: string) =>
      request(rig.app).post(`/ui/inbox/${item}/reapprove`).type('form').set('Cookie', dana.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: dana.csrf, approval, note: 'du_opened is an inquiry; refund anyway', token: TOKENS.danaApprover, facts_shown: factsShown });
    const clicked = await form(shown);
    expect({ status: clicked.status, location: clicked.headers.location ?? null }).toEqual({ status: 409, location: null });
    expect(clicked.text).toContain('shows other facts than it did when it was read');
    expect(await reapprovalRecorded(item)).toBe(false);

    // The page drawn with the refusal shows the second chargeback, and its form names those facts.
    expect(clicked.text).toContain('du_second');
    const redrawn = /<input type="hidden" name="facts_shown" value="([0-9a-f]{16})">/.exec(clicked.text)?.[1];
    expect(redrawn).toBeDefined();
    expect(redrawn).not.toBe(shown);
    const accepted = await form(redrawn ?? '');
    expect({ status: accepted.status, location: accepted.headers.location ?? null }).toEqual({ status: 303, location: `/ui/inbox/${item}?done=reapprove` });
    expect((await rig.stores.inbox.get(item))?.closure).toMatchObject({ action: 'reapprove', by: { name: 'dana' } });
  });

  it('is refused over the API when facts_shown names what the item showed before; GET and the listing carry the current one', async () => {
    const { pi, item, effectId } = await make.stale();
    const approval = await make.grant(pi);
    const got = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    const listed = await request(rig.app).get(`/v1/inbox?effect=${effectId}`).set(bearer(TOKENS.approver));
    const before = got.body.facts_shown as string;
    expect(before).toMatch(/^[0-9a-f]{16}$/);
    expect(listed.body.data.map((entry: { facts_shown: string }) => entry.facts_shown)).toEqual([before]);

    await refreshedByAnother(pi, item, approval);
    const after = (await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver))).body.facts_shown as string;
    expect(after).toMatch(/^[0-9a-f]{16}$/);
    expect(after).not.toBe(before);

    const stale = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.approver)).send({ approval, note: 'refund anyway', facts_shown: before });
    expect({ status: stale.status, code: stale.body.error?.code }).toEqual({ status: 409, code: 'facts_changed' });
    expect(await reapprovalRecorded(item)).toBe(false);
    const current = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.approver)).send({ approval, note: 'both are inquiries', facts_shown: after });
    expect(current.status, JSON.stringify(current.body)).toBe(202);
    expect(current.body.premises).toEqual({ chargebacks: ['du_opened', 'du_second'], refunded_by_others: 0 });
    // A closed item offers no re-approval: its views name no facts to re-approve on.
    expect(current.body.item.facts_shown).toBeNull();
    expect((await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver))).body.facts_shown).toBeNull();
  });

  it('is refused from a page form that names no facts_shown (the page always sends it)', async () => {
    const { pi, item } = await make.stale();
    const approval = await make.grant(pi);
    const dana = await pageSession(rig.app, TOKENS.danaApprover);
    const clicked = await request(rig.app).post(`/ui/inbox/${item}/reapprove`).type('form').set('Cookie', dana.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: dana.csrf, approval, note: 'refund anyway', token: TOKENS.danaApprover });
    expect({ status: clicked.status, location: clicked.headers.location ?? null }).toEqual({ status: 400, location: null });
    expect(clicked.text).toContain('read the item again and re-approve from its page');
    expect(await reapprovalRecorded(item)).toBe(false);
  });
});
