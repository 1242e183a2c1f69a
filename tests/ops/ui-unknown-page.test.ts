// Rule: a path under /ui that is no page (a typo, an old bookmark, a form's URL or /ui/sign-out opened in the address
// bar) is answered with an HTML page, signed in or not, never the API's JSON 401 or 404: the sign-in form when signed
// out, "No such page" with the navigation when signed in, and an inbox action's URL is sent to its item.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { signIn } from '../http/page-sessions.js';
import { rigSuite, TOKENS } from '../http/rig.js';

const rig = rigSuite();

describe('a path under /ui that is no page', () => {
  it('is answered with a page, signed in or not', async () => {
    const { cookie } = await signIn(rig.app, TOKENS.operator);
    for (const path of ['/ui/effect/abc', '/ui/sign-out', '/ui/inbox/x/dismiss/again']) {
      const out = await request(rig.app).get(path).set('Accept', 'text/html');
      expect({ path, status: out.status, type: out.type }).toEqual({ path, status: 404, type: 'text/html' });
      expect(out.text).toContain('There is no page at this address. Sign in, then use the links at the top of the page.');
      expect(out.text).toContain('<form method="post" action="/ui/sign-in"');
      const signedIn = await request(rig.app).get(path).set('Cookie', cookie);
      expect({ path, status: signedIn.status, type: signedIn.type }).toEqual({ path, status: 404, type: 'text/html' });
      expect(signedIn.text).toContain('<h1>No such page</h1>');
      expect(signedIn.text).toContain('<nav aria-label="Sections">');
    }
    expect((await request(rig.app).get('/ui/sign-out').set('Cookie', cookie)).text).toContain('To sign out, use the Sign out button at the top.');
    // A POST to a path that is no page is answered the same way.
    const posted = await request(rig.app).post('/ui/nothing').set('Cookie', cookie);
    expect({ status: posted.status, type: posted.type }).toEqual({ status: 404, type: 'text/html' });
  });

  it("sends a GET of an inbox action's URL to its item", async () => {
    const { cookie } = await signIn(rig.app, TOKENS.approver);
    const opened = await request(rig.app).get('/ui/inbox/some-item/dismiss').set('Cookie', cookie);
    expect({ status: opened.status, location: opened.headers.location }).toEqual({ status: 303, location: '/ui/inbox/some-item' });
  });
});
