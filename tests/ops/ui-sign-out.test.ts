// RULE: a sign-out another site posts is refused (403), as a cross-site sign-in is, and leaves the session cookie
// alone. The cookie is SameSite=Strict, so such a post arrives without it and the CSRF check (which needs the session)
// cannot see it: without the Sec-Fetch-Site / Origin check any page on the web could sign a person out of the page.
// Real Chromium, two sites (127.0.0.1 and localhost). Without /usr/bin/chromium the browser half fails and says how
// to install it, unless INTERLOCK_SKIP_BROWSER=1 says this machine has no browser on purpose.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROWSER_MISSING, BROWSER_PRESENT, closeBrowserTest, launchBrowser, SKIP_BROWSER } from '../support/browser.js';
import { signIn, signInInBrowser } from '../http/page-sessions.js';
import { startRig, TOKENS, type Rig } from '../http/rig.js';


describe('POST /ui/sign-out from another site', () => {
  let rig: Rig;
  let app: Server;
  let evil: Server;
  let base: string;
  let browser: Browser | undefined;

  beforeAll(async () => {
    rig = await startRig();
    app = createServer(rig.app);
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
    // Another site: localhost is not the same site as 127.0.0.1.
    evil = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><form id="f" method="post" action="${base}/ui/sign-out"></form><script>document.getElementById('f').submit()</script>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    if (BROWSER_PRESENT) browser = await launchBrowser();
  }, 60_000);

  afterAll(() => closeBrowserTest({ browser, servers: [app, evil], rig }));

  it('is refused like a cross-site sign-in: 403, no Set-Cookie clearing the session', async () => {
    const answer = await request(rig.app).post('/ui/sign-out').type('form').set('sec-fetch-site', 'cross-site').set('origin', 'http://evil.example').send({});
    expect(answer.status).toBe(403);
    expect(String(answer.headers['set-cookie'] ?? '')).not.toMatch(/interlock_session=;/);
    // Origin decides when the browser sends no Sec-Fetch-Site.
    const byOrigin = await request(rig.app).post('/ui/sign-out').type('form').set('origin', 'http://evil.example').send({});
    expect(byOrigin.status).toBe(403);
  });

  it('still signs out from the page itself (same origin, the session and its CSRF token)', async () => {
    const ops = await signIn(rig.app, TOKENS.operator);
    const answer = await request(rig.app).post('/ui/sign-out').type('form').set('sec-fetch-site', 'same-origin').set('cookie', ops.cookie).send({ csrf: ops.csrf });
    expect(answer.status).toBe(303);
    expect(String(answer.headers['set-cookie'] ?? '')).toMatch(/interlock_session=;/);
  });

  it.skipIf(SKIP_BROWSER)('does not sign the person out in a real browser when another site posts the form', async () => {
    if (browser === undefined) throw new Error(BROWSER_MISSING);
    const context = await browser.newContext();
    const page = await context.newPage();
    await signInInBrowser(page, base, TOKENS.operator, '/ui/sign-in');
    expect((await context.cookies()).some((stored) => stored.name === 'interlock_session')).toBe(true);
    await page.goto(`http://localhost:${(evil.address() as AddressInfo).port}/`);
    await page.waitForURL((url) => url.href.startsWith(base), { timeout: 10_000 });
    // Still signed in: the cookie is kept, and the page itself opens, not the sign-in form.
    expect((await context.cookies()).some((stored) => stored.name === 'interlock_session')).toBe(true);
    await page.goto(`${base}/ui`);
    expect(new URL(page.url()).pathname).toBe('/ui');
    await context.close();
  });
});
