// Rule: a cookie of the session's name that another server on the host set for a longer path neither stands in for
// the page's own session nor keeps it alive after sign-out. Cookies are not kept apart by port (RFC 6265 §8.5), so that
// server can set `interlock_session=x; Path=/ui/sign-out` for the host, and the browser sends it before the page's
// own cookie (longer paths first, §5.4). The page reads the first value that is a session open here; signing out,
// with the CSRF token of one of the sessions the request holds, ends every one of them and clears the cookie on / and
// on the sign-out path, so the copy of the session that server kept is refused from then on. Real Chromium for the
// browser's half; without /usr/bin/chromium it fails and says how to install it, unless INTERLOCK_SKIP_BROWSER=1 says
// this machine has no browser on purpose.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../webhooks/app.js';
import { closeBrowserTest, launchBrowser, SKIP_BROWSER } from '../support/browser.js';
import { signIn, signInInBrowser } from '../http/page-sessions.js';
import { rigSuite, startRig, tokenRegistry, TOKENS, type Rig } from '../http/rig.js';


const listen = (server: Server) => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
const signOut = (rig: Rig, cookie: string, csrf: string) => request(rig.app).post('/ui/sign-out').type('form').set('sec-fetch-site', 'same-origin').set('cookie', cookie).send({ csrf });
const stillOpen = async (rig: Rig, cookie: string) => (await request(rig.app).get('/ui').set('cookie', cookie)).status === 200;

describe('a session cookie another server on the host planted for a longer path', () => {
  const rig = rigSuite({ metrics: true });

  it('does not keep the session alive: signing out ends it, and clears the cookie on / and on the sign-out path', async () => {
    const ops = await signIn(rig.app, TOKENS.operator);
    // The copy the other server kept of the page's own cookie.
    const copy = ops.cookie;
    const out = await signOut(rig, `interlock_session=planted; ${ops.cookie}`, ops.csrf);
    expect({ status: out.status, location: out.headers.location }).toEqual({ status: 303, location: '/ui/sign-in' });
    expect(await stillOpen(rig, copy)).toBe(false);
    expect((await request(rig.app).get('/metrics').set('cookie', copy)).status).toBe(401);
    const cleared = ([] as string[]).concat(out.headers['set-cookie'] ?? []).filter((line) => line.startsWith('interlock_session=;'));
    expect(cleared.map((line) => /Path=([^;]+)/.exec(line)?.[1]).sort()).toEqual(['/', '/ui/sign-out']);
  });

  it('ends the session when the planted value does not even decode (%E0%A4%A), which stopped the cookie being read at all', async () => {
    const ops = await signIn(rig.app, TOKENS.operator);
    const out = await signOut(rig, `interlock_session=%E0%A4%A; ${ops.cookie}`, ops.csrf);
    expect(out.status).toBe(303);
    expect(await stillOpen(rig, ops.cookie)).toBe(false);
  });

  it('is passed over on the page, the metrics and the dashboard: the session after it is the one read', async () => {
    const ops = await signIn(rig.app, TOKENS.operator);
    for (const planted of ['planted', '%E0%A4%A', `${ops.value.slice(0, -1)}${ops.value.endsWith('A') ? 'B' : 'A'}`]) {
      const cookie = `interlock_session=${planted}; ${ops.cookie}`;
      const page = await request(rig.app).get('/ui').set('cookie', cookie);
      expect(page.status, planted).toBe(200);
      expect(/name="csrf" value="([^"]+)"/.exec(page.text)?.[1], planted).toBe(ops.csrf);
      expect((await request(rig.app).get('/metrics').set('cookie', cookie)).status, planted).toBe(200);
      expect((await request(rig.app).get('/admin/queues').set('cookie', cookie)).status, planted).toBe(200);
    }
  });

  it('when it is a session of its own (another token holder signed in and planted it), signing out with the page form ends both', async () => {
    const ops = await signIn(rig.app, TOKENS.operator);
    const theirs = await signIn(rig.app, TOKENS.support);
    const out = await signOut(rig, `${theirs.cookie}; ${ops.cookie}`, ops.csrf);
    expect(out.status).toBe(303);
    expect(await stillOpen(rig, ops.cookie)).toBe(false);
    expect(await stillOpen(rig, theirs.cookie)).toBe(false);
  });

  it('signs nothing out when the form carries the CSRF token of none of the sessions sent', async () => {
    const ops = await signIn(rig.app, TOKENS.operator);
    const aud = await signIn(rig.app, TOKENS.auditor);
    const refused = await signOut(rig, `interlock_session=planted; ${ops.cookie}`, aud.csrf);
    expect(refused.status).toBe(403);
    expect(String(refused.headers['set-cookie'] ?? '')).not.toMatch(/interlock_session=;/);
    expect(await stillOpen(rig, ops.cookie)).toBe(true);
  });
});

describe.skipIf(SKIP_BROWSER)('Sign out in a browser that holds a cookie another port of the host planted', () => {
  let rig: Rig;
  let service: Server;
  let other: Server;
  let browser: Browser;
  let base = '';
  let otherBase = '';
  const copies: string[] = [];

  beforeAll(async () => {
    rig = await startRig();
    // Another program on the same host, another port: it keeps the session cookies it is sent and plants one for the
    // sign-out path.
    other = createServer((req, res) => {
      const sent = /(?:^|;\s*)(interlock_session=[^;]+)/.exec(String(req.headers.cookie ?? ''))?.[1];
      if (sent !== undefined && sent !== 'interlock_session=planted') copies.push(sent);
      res.setHeader('Set-Cookie', 'interlock_session=planted; Path=/ui/sign-out; SameSite=Lax');
      res.end('hello');
    });
    otherBase = await listen(other);
    service = createServer(createApp({ stores: rig.stores, effects: rig.queue, readFacts: async () => ({}), tokens: tokenRegistry(), logger: pino({ level: 'silent' }) }));
    base = await listen(service);
    browser = await launchBrowser();
  }, 90_000);

  afterAll(() => closeBrowserTest({ browser, servers: [service, other], rig }));

  it('ends the session the other server holds a copy of, and leaves the browser no session cookie on any path', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signInInBrowser(page, base, TOKENS.operator);
    await page.goto(`${otherBase}/`);
    const copy = copies[0];
    expect(copy, 'the browser sends the cookie to the other port').toBeDefined();
    expect((await context.cookies()).filter((cookie) => cookie.name === 'interlock_session').map((cookie) => cookie.path).sort()).toEqual(['/', '/ui/sign-out']);

    await page.goto(`${base}/ui`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${base}/ui/sign-in`);
    const after = await request(service)
      .get('/ui')
      .set('cookie', copy ?? '');
    expect({ status: after.status, location: after.headers.location }).toEqual({ status: 303, location: '/ui/sign-in?next=%2Fui' });
    expect((await context.cookies()).filter((cookie) => cookie.name === 'interlock_session')).toEqual([]);
    await context.close();
  });
});
