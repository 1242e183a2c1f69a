// The page's session, as a person meets it: each page request's log line names who made it, as the API's do (the page
// signs its callers in itself, and its lines named nobody, the inbox forms that close items included); and a form
// sent after the session ended (the cookie lasts 12 h) comes back to its page after signing in again, not to the
// form's own URL, which is no page (the approver landed on the JSON API's "No route" error).
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { inboxSuite } from '../http/inbox-items.js';
import { pageSession } from '../http/page-sessions.js';
import { bearer, TOKENS } from '../http/rig.js';

const { rig, make } = inboxSuite();

describe('the page session', () => {
  it('names the signed-in caller on the request log line of a page request, as it does for the API', async () => {
    const { item } = await make.stale();
    expect((await request(rig.app).get('/v1/inbox').set(bearer(TOKENS.approver))).status).toBe(200);
    const alex = await pageSession(rig.app, TOKENS.approver);
    const done = await request(rig.app).post(`/ui/inbox/${item}/dismiss`).type('form').set('Cookie', alex.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: alex.csrf, note: 'Handled by phone.', token: TOKENS.approver });
    expect(done.status).toBe(303);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(rig.logs.find((line) => line.method === 'GET' && line.url === '/v1/inbox')).toMatchObject({ role: 'approver', token: 'alex' });
    expect(rig.logs.find((line) => line.method === 'POST' && String(line.url).startsWith('/ui/inbox/'))).toMatchObject({ role: 'approver', token: 'alex' });
  });

  it('a form sent after the session ended comes back to its item page after signing in again', async () => {
    const app = rig.app;
    const { item } = await make.stale();
    const posted = await request(app).post(`/ui/inbox/${item}/dismiss`).type('form').set('sec-fetch-site', 'same-origin').send({ csrf: 'stale', note: 'Handled by phone.' });
    expect(posted.status).toBe(303);
    const form = await request(app).get(posted.headers.location as string);
    const next = /name="next" value="([^"]*)"/.exec(form.text)?.[1]?.replace(/&amp;/g, '&') ?? '';
    expect(next).toBe(`/ui/inbox/${item}`);
    const signed = await request(app).post('/ui/sign-in').type('form').set('sec-fetch-site', 'same-origin').send({ token: TOKENS.approver, next });
    expect(signed.status).toBe(303);
    // The session the sign-in set, as the browser would send it.
    const session = String(signed.headers['set-cookie']).split(';')[0] ?? '';
    const landed = await request(app).get(signed.headers.location as string).set('Cookie', session);
    expect(landed.status).toBe(200);
    expect(landed.headers['content-type']).toMatch(/text\/html/);
    // Nothing was dismissed by the form sent signed out.
    expect((await rig.stores.inbox.get(item))?.status).toBe('open');
  });
});
