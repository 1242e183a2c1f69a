// Rule: a role the inbox is closed to (support) reads no inbox item through the page, whatever method it sends: a
// form posted to an item's action is refused as GET /ui/inbox/:id is, before the item is read, so the refusal shows
// nothing of it (not the approver's signed closure note, not the facts that changed).
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { inboxSuite } from '../http/inbox-items.js';
import { signIn } from '../http/page-sessions.js';
import { bearer, TOKENS } from '../http/rig.js';

const { rig, make } = inboxSuite();

const post = (path: string, cookie: string, fields: Record<string, string>) => request(rig.app).post(path).type('form').set('Cookie', cookie).set('sec-fetch-site', 'same-origin').send(fields);

describe('a support session and an inbox item', () => {
  it('is refused the item on GET, on the API and on each action, and no refusal shows the item', async () => {
    const { item } = await make.stale();
    const approver = await signIn(rig.app, TOKENS.approver);
    const note = 'Chargeback du_opened is fraud: customer flagged in case SECRET-4711';
    expect((await post(`/ui/inbox/${item}/dismiss`, approver.cookie, { csrf: approver.csrf, note, token: TOKENS.approver })).status).toBe(303);

    const support = await signIn(rig.app, TOKENS.support);
    expect((await request(rig.app).get(`/v1/inbox/${encodeURIComponent(item)}`).set(bearer(TOKENS.support))).status).toBe(403);
    const get = await request(rig.app).get(`/ui/inbox/${item}`).set('Cookie', support.cookie);
    expect(get.status).toBe(403);
    expect(get.text).not.toContain('SECRET-4711');

    // Without a CSRF token, with a wrong one and with the session's own: each is the same refusal, naming the role.
    for (const action of ['dismiss', 'resolve', 'reapprove']) {
      for (const csrf of ['', 'not-this-sessions', support.csrf]) {
        const posted = await post(`/ui/inbox/${item}/${action}`, support.cookie, { csrf, note: 'x' });
        const what = `${action} with ${csrf === support.csrf ? 'its own' : csrf === '' ? 'no' : 'a wrong'} CSRF token`;
        expect(posted.status, what).toBe(403);
        expect(posted.text, what).toContain('the inbox is for approvers, auditors and operators');
        expect(posted.text, what).not.toContain('SECRET-4711');
        expect(posted.text, what).not.toContain('Facts that changed');
        expect(posted.text, what).not.toContain(item);
      }
    }
    // And an item that does not exist is refused the same way: a 404 would tell support which ids are items.
    expect((await post('/ui/inbox/no-such-item/dismiss', support.cookie, { csrf: support.csrf, note: 'x' })).status).toBe(403);
  });
});
