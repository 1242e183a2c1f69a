// Rule: an approver whose form carried a stale CSRF token (it signed in again in another tab) is refused, nothing is
// recorded, and the item is shown again with its forms carrying this session's token, so sending again works; the
// page never tells a signed-in approver that only an approver may act.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { inboxSuite } from '../http/inbox-items.js';
import { signIn } from '../http/page-sessions.js';
import { TOKENS } from '../http/rig.js';

const { rig, make } = inboxSuite();

describe('an approver with the item open in a tab from an earlier sign-in', () => {
  it('is shown the forms again after its stale form is refused, and the form shown then works', async () => {
    const { item } = await make.stale();
    const first = await signIn(rig.app, TOKENS.approver);
    expect((await request(rig.app).get(`/ui/inbox/${item}`).set('Cookie', first.cookie)).text).toContain(`action="/ui/inbox/${item}/dismiss"`);
    // Signed in again elsewhere: the browser now sends the new cookie with the old page's CSRF token.
    const second = await signIn(rig.app, TOKENS.approver);
    const note = 'Customer called, refunded by hand';
    const sent = await request(rig.app).post(`/ui/inbox/${item}/dismiss`).type('form').set('Cookie', second.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: first.csrf, note, token: TOKENS.approver });
    expect(sent.status).toBe(403);
    expect(sent.text).toContain('Use the form on this page.');
    expect(sent.text).not.toContain('Only an approver may act on this item.');
    expect(sent.text).toContain(`action="/ui/inbox/${item}/dismiss"`);
    expect(sent.text).toContain(`name="csrf" value="${second.csrf}"`);
    expect((await rig.stores.inbox.get(item))?.closure).toBeNull();
    const again = await request(rig.app).post(`/ui/inbox/${item}/dismiss`).type('form').set('Cookie', second.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: second.csrf, note, token: TOKENS.approver });
    expect(again.status).toBe(303);
  });
});
