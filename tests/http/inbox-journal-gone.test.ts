// Rule: an item listed with actions accepts one of them. An item whose effect's journal is gone (Redis lost the chain
// on a failover, its keys deleted) lists dismiss alone, and a dismissal closes it in the inbox index only, as a failed
// case's item is dismissed, its closure saying no signed entry could be written; a re-approval or resolution is
// refused 409 saying why. It used to be listed open with reapprove and dismiss for good, every action answered 404.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { inboxSuite } from './inbox-items.js';
import { pageSession } from './page-sessions.js';
import { bearer, TOKENS } from './rig.js';

const { rig, make } = inboxSuite();

/** The effect's chain and state deleted; `partition`: its entry in the effects index too. */
async function loseJournal(effectId: string, partition: boolean): Promise<void> {
  for (const key of await rig.redis.keys(`*${effectId}*`)) await rig.redis.del(key);
  if (partition) await rig.redis.hdel(rig.stores.keys.effectPartitions, effectId);
}

describe('an item whose effect journal is gone', () => {
  for (const partition of [false, true]) {
    it(`lists dismiss alone and is dismissed in the index, saying why (${partition ? 'no partition' : 'no state'})`, async () => {
      const { pi, effectId, item } = await make.stale();
      await loseJournal(effectId, partition);
      const listed = await request(rig.app).get(`/v1/inbox?effect=${effectId}`).set(bearer(TOKENS.approver));
      expect(listed.body.data.map((entry: { id: string; status: string; actions: string[] }) => [entry.id, entry.status, entry.actions])).toEqual([[item, 'open', ['dismiss']]]);
      expect((await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver))).body.actions).toEqual(['dismiss']);

      const reapproved = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.approver)).send({ approval: await make.grant(pi) });
      expect({ status: reapproved.status, code: reapproved.body.error?.code }).toEqual({ status: 409, code: 'action_not_allowed' });
      expect(reapproved.body.error.message).toContain('journal is gone');

      const dismissed = await request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(bearer(TOKENS.approver)).send({ note: 'The effect is gone; nothing to do.' });
      expect(dismissed.status, JSON.stringify(dismissed.body)).toBe(200);
      expect({ status: dismissed.body.status, action: dismissed.body.closed.action, note: dismissed.body.closed.note }).toEqual({ status: 'closed', action: 'dismiss', note: 'The effect is gone; nothing to do.' });
      expect(dismissed.body.closed.unsigned).toContain('no signed entry could be written');
      const closed = await request(rig.app).get(`/v1/inbox?status=closed&effect=${effectId}`).set(bearer(TOKENS.approver));
      expect(closed.body.data.map((entry: { id: string }) => entry.id)).toEqual([item]);
      const again = await request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(bearer(TOKENS.danaApprover)).send({ note: 'Gone, yes.' });
      expect({ status: again.status, code: again.body.error?.code }).toEqual({ status: 409, code: 'inbox_item_closed' });
    });
  }

  it('is dismissed from the page, which says no signed entry was written', async () => {
    const { effectId, item } = await make.stale();
    await loseJournal(effectId, false);
    const dana = await pageSession(rig.app, TOKENS.danaApprover);
    const posted = await request(rig.app).post(`/ui/inbox/${item}/dismiss`).type('form').set('Cookie', dana.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: dana.csrf, note: 'gone', token: TOKENS.danaApprover });
    expect(posted.status, posted.text.slice(0, 500)).toBe(303);
    const shown = await request(rig.app).get(String(posted.headers.location)).set('Cookie', dana.cookie);
    expect(shown.text).toContain('no signed entry could be written');
    expect(shown.text).not.toContain('The entry is signed on the effect');
  });
});
