// Rule: the same inbox form sent twice by the same person (a double submit, a second tab: same action, same fields) is
// told plainly that its own earlier identical action closed the item and that nothing new was recorded, on the page
// and over the API alike (409 inbox_item_closed); "asks for something else" is said only when the second request does
// ask for another action or another resolution. The page said "this request asks for something else" to an identical
// repeat.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { inboxSuite } from '../http/inbox-items.js';
import { factsShownOnPage } from '../http/page-facts-shown.js';
import { signIn } from '../http/page-sessions.js';
import { bearer, TOKENS } from '../http/rig.js';

const { rig, make } = inboxSuite();

const alertOf = (text: string) => /<p class="error" role="alert">([^<]*)<\/p>/.exec(text)?.[1] ?? '';

describe('an inbox form sent twice by the same person', () => {
  it('is told on the page that its own identical action closed the item, and the item shows closed by it', async () => {
    const { item } = await make.stale();
    const approver = await signIn(rig.app, TOKENS.approver);
    const post = () => request(rig.app).post(`/ui/inbox/${item}/dismiss`).type('form').set('Cookie', approver.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: approver.csrf, note: 'handled by phone', token: TOKENS.approver });
    const first = await post();
    expect({ status: first.status, location: first.headers.location }).toEqual({ status: 303, location: `/ui/inbox/${item}?done=dismiss` });
    const again = await post();
    expect(again.status).toBe(409);
    expect(again.type).toBe('text/html');
    const alert = alertOf(again.text);
    expect(alert).toContain('You (alex, approver) already dismissed it at ');
    expect(alert).toContain('this request asks for the same, so nothing new was recorded');
    expect(alert).not.toContain('something else');
    // The item as it stands: closed by their dismissal, with its note.
    expect(again.text).toContain('<h2 id="closed-title">Closed</h2>');
    expect(again.text).toContain('handled by phone');
    expect((await rig.stores.inbox.get(item))?.closure).toMatchObject({ action: 'dismiss', by: { name: 'alex' }, note: 'handled by phone' });
  });

  it('is told "something else" only when it asks for another action or another resolution', async () => {
    const { item, pi } = await make.stale();
    const approver = await signIn(rig.app, TOKENS.approver);
    // The re-approve form as the page drew it before the dismissal (a second tab).
    const shown = await factsShownOnPage(rig.app, item, approver.cookie);
    const dismissed = await request(rig.app).post(`/ui/inbox/${item}/dismiss`).type('form').set('Cookie', approver.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: approver.csrf, note: 'handled by phone', token: TOKENS.approver });
    expect(dismissed.status).toBe(303);
    const reapproved = await request(rig.app).post(`/ui/inbox/${item}/reapprove`).type('form').set('Cookie', approver.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: approver.csrf, approval: await make.grant(pi), token: TOKENS.approver, facts_shown: shown });
    expect(reapproved.status).toBe(409);
    expect(alertOf(reapproved.text)).toContain('You (alex, approver) already dismissed it at ');
    expect(alertOf(reapproved.text)).toContain('this request asks to re-approve it, so it was not recorded');

    const ambiguous = await make.ambiguous();
    const resolve = (resolution: string) => request(rig.app).post(`/ui/inbox/${ambiguous.item}/resolve`).type('form').set('Cookie', approver.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: approver.csrf, resolution, note: 'checked the Dashboard', token: TOKENS.approver });
    expect((await resolve('landed')).status).toBe(303);
    const same = await resolve('landed');
    expect(same.status).toBe(409);
    expect(alertOf(same.text)).toContain('already resolved it (landed) at ');
    expect(alertOf(same.text)).toContain('this request asks for the same, so nothing new was recorded');
    const other = await resolve('did_not_land');
    expect(other.status).toBe(409);
    expect(alertOf(other.text)).toContain('this request asks to resolve it (did not land), so it was not recorded');
  });

  it('is answered over the API with the same words as on the page', async () => {
    const { item } = await make.stale();
    const send = (note: string) => request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(bearer(TOKENS.approver)).send({ note });
    expect((await send('handled by phone')).status).toBe(200);
    const again = await send('handled by phone');
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('inbox_item_closed');
    expect(again.body.error.message).toContain('You (alex, approver) already dismissed it at ');
    expect(again.body.error.message).toContain('this request asks for the same, so nothing new was recorded');
    // Another note on the same action: still their own action, and the note given then is the one kept.
    const otherNote = await send('called the customer');
    expect(otherNote.status).toBe(409);
    expect(otherNote.body.error.message).toContain('this request asks for the same with another note, so nothing new was recorded');
  });
});
