// Rule: what the browser hands another server on the page's host is never the API token, and stops working when the
// person signs out. Cookies are not kept apart by port (RFC 6265 §8.5) and SameSite counts every port of a host as one
// site, so the sign-in cookie goes to every other HTTP server on the host: with `npm start`'s defaults that includes the
// sandbox at 127.0.0.1:12111, which the page links Stripe ids to. Real Chromium; without /usr/bin/chromium the test
// fails and says how to install it, unless INTERLOCK_SKIP_BROWSER=1 says this machine has no browser on purpose.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../webhooks/app.js';
import { closeBrowserTest, launchBrowser, SKIP_BROWSER } from '../support/browser.js';
import { signInInBrowser } from '../http/page-sessions.js';
import { approvalBody, bearer, refundBody, startRig, tokenRegistry, TOKENS, uid, type Rig } from '../http/rig.js';


const listen = (server: Server) => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));

describe.skipIf(SKIP_BROWSER)('the sign-in cookie another server on the host receives', () => {
  let rig: Rig;
  let service: Server;
  let other: Server;
  let browser: Browser;
  const received: string[] = [];
  let base: string;
  let otherBase: string;
  let committed: string;

  beforeAll(async () => {
    rig = await startRig({ worker: true });
    // Another program on the same host and another port: here, where the page links Stripe ids (the sandbox).
    other = createServer((req, res) => {
      received.push(String(req.headers.cookie ?? ''));
      res.end('{}');
    });
    otherBase = await listen(other);
    const app = createApp({
      stores: rig.stores,
      effects: rig.queue,
      readFacts: (effect, names, context) => rig.target.readFacts(context.effectId, effect, names, { timeoutMs: context.timeoutMs }),
      tokens: tokenRegistry(),
      logger: pino({ level: 'silent' }),
      ui: { links: { kind: 'sandbox', baseUrl: otherBase } },
    });
    service = createServer(app);
    base = await listen(service);
    const pi = `pi_p${uid()}`;
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    const approval = approvalBody({ scope: `payment:${pi}`, cap_cents: 5_000 });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const one = await request(rig.app).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: pi, approval: approval.id, amount: 2_000 }));
    expect(one.body.outcome).toBe('COMMITTED');
    committed = one.body.effect_id;
    browser = await launchBrowser();
  }, 90_000);

  afterAll(() => closeBrowserTest({ browser, servers: [service, other], rig }));

  it('is not the token, calls nothing on the JSON API, and is refused by the page once the person signs out', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signInInBrowser(page, base, TOKENS.operator);
    await page.goto(`${base}/ui/effects/${committed}`);
    const link = page.locator(`a[href^="${otherBase}"]`).first();
    expect(await link.count()).toBe(1);
    await link.click();
    await page.waitForURL(`${otherBase}/**`);

    const copy = received.map((header) => /(?:^|;\s*)(interlock_session=[^;]+)/.exec(header)?.[1]).find((cookie) => cookie !== undefined);
    expect(copy, 'the browser sends the cookie to the other port').toBeDefined();
    const taken = copy ?? '';
    for (const token of Object.values(TOKENS)) {
      expect(received.join('\n')).not.toContain(token);
      expect(received.join('\n')).not.toContain(encodeURIComponent(token));
    }
    const value = decodeURIComponent(taken.slice('interlock_session='.length));
    expect((await request(service).get('/v1/effects').set(bearer(value))).status).toBe(401);
    expect((await request(service).get('/v1/effects').set('cookie', taken)).status).toBe(401);
    // Until the person signs out, the copy opens the page (a session, for at most 12 h) ...
    expect((await request(service).get('/ui').set('cookie', taken)).status).toBe(200);

    await page.goto(`${base}/ui`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${base}/ui/sign-in`);
    // ... and not after.
    const after = await request(service).get('/ui').set('cookie', taken);
    expect({ status: after.status, location: after.headers.location }).toEqual({ status: 303, location: '/ui/sign-in?next=%2Fui' });
    await context.close();
  });
});
