// Rule: each role signs in to a page it may read (an approver, the inbox's only actor, to the inbox, not to the
// effects it may not read), the sign-in form names every role that may sign in, and no link a role is shown (the
// navigation, an inbox item's effect, a message page's way back) leads it to a 403.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { inboxSuite } from '../http/inbox-items.js';
import { signIn } from '../http/page-sessions.js';
import { TOKENS } from '../http/rig.js';

const { rig, make } = inboxSuite();

/** The links to the page's own paths (the receipt download is a file, not a page). */
const links = (text: string) => [...text.matchAll(/<a href="(\/ui[^"]*)"/g)].map((match) => (match[1] ?? '').replace(/&amp;/g, '&')).filter((href) => !href.endsWith('/receipt'));

describe('where each role is sent and linked', () => {
  it('names every role on the sign-in form and sends each to the first page it may read', async () => {
    expect((await request(rig.app).get('/ui/sign-in')).text).toContain('Paste an API token (support, approver, auditor or operator).');
    for (const [token, home] of [[TOKENS.approver, '/ui/inbox'], [TOKENS.support, '/ui'], [TOKENS.auditor, '/ui'], [TOKENS.operator, '/ui']] as const) {
      const signed = await request(rig.app).post('/ui/sign-in').type('form').set('sec-fetch-site', 'same-origin').send({ token });
      expect(signed.status).toBe(303);
      expect(signed.headers.location).toBe(home);
      const cookie = String(signed.headers['set-cookie']?.[0]).split(';')[0] as string;
      expect((await request(rig.app).get(home).set('Cookie', cookie)).status).toBe(200);
    }
  });

  it('shows no role a link that answers it 403', async () => {
    const { item, effectId } = await make.stale();
    const approver = await signIn(rig.app, TOKENS.approver);
    const forbidden: string[] = [];
    const pages = [
      [TOKENS.approver, `/ui/inbox/${item}`],
      [TOKENS.approver, '/ui/inbox'],
      [TOKENS.approver, '/ui'],
      [TOKENS.support, '/ui'],
      [TOKENS.support, `/ui/effects/${effectId}`],
      [TOKENS.support, '/ui/inbox'],
      [TOKENS.auditor, `/ui/inbox/${item}`],
    ] as const;
    for (const [token, start] of pages) {
      const { cookie } = token === TOKENS.approver ? approver : await signIn(rig.app, token);
      const page = await request(rig.app).get(start).set('Cookie', cookie);
      for (const href of new Set(links(page.text))) {
        const opened = await request(rig.app).get(href).set('Cookie', cookie);
        if (opened.status === 403) forbidden.push(`${start} shows ${href}`);
      }
    }
    expect(forbidden).toEqual([]);
    // The approver still sees which effect the item is about, as text.
    const shown = await request(rig.app).get(`/ui/inbox/${item}`).set('Cookie', approver.cookie);
    expect(shown.text).toContain(`<dt>Effect</dt><dd><code>${effectId}</code> on`);
    const auditor = await signIn(rig.app, TOKENS.auditor);
    expect((await request(rig.app).get(`/ui/inbox/${item}`).set('Cookie', auditor.cookie)).text).toContain(`<a href="/ui/effects/${effectId}"><code>${effectId}</code></a>`);
  });
});
