// Rule: an effect's page stays inside the window whatever the length of a value it shows: the longest request id
// the API takes (200 characters, no space) wraps in its `dd`, as it does in the list, and no part of the page is off
// to the side of a 1100 px window. Chromium as in ui-browser.test.ts (skipped only with INTERLOCK_SKIP_BROWSER=1).
import type { Server } from 'node:http';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeBrowserTest, launchBrowser, serveForBrowser, SKIP_BROWSER } from '../support/browser.js';
import { signInInBrowser } from '../http/page-sessions.js';
import { approvalBody, bearer, startRig, TOKENS, uid, type Rig } from '../http/rig.js';

describe.skipIf(SKIP_BROWSER)('an effect with a 200-character request id, in a 1100 px window', () => {
  let rig: Rig;
  let server: Server;
  let base: string;
  let browser: Browser;
  let effectId: string;

  beforeAll(async () => {
    rig = await startRig();
    const pi = `pi_l${uid()}`;
    const approval = approvalBody({ scope: `payment:${pi}`, cap_cents: 5_000 });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const recorded = await rig.queue.propose({ requestId: `case-${'x'.repeat(195)}`, agent: 'sam', approval: String(approval.id), premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent: pi, amount: 500 } });
    effectId = recorded.effectId;
    ({ server, base } = await serveForBrowser(rig.app));
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await closeBrowserTest({ browser, servers: [server], rig });
  });

  it('is shown without the page running off the right side of the window', async () => {
    const page = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage();
    await signInInBrowser(page, base, TOKENS.auditor);
    await page.goto(`${base}/ui/effects/${effectId}`);
    expect(await page.getByText(`case-${'x'.repeat(195)}`, { exact: true }).count()).toBeGreaterThan(0);
    const widths = await page.evaluate(() => {
      const doc = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }).document;
      return { scroll: doc.documentElement.scrollWidth, client: doc.documentElement.clientWidth };
    });
    expect(widths.scroll, `the page is ${widths.scroll} px wide in a ${widths.client} px window`).toBeLessThanOrEqual(widths.client);
  });
});
