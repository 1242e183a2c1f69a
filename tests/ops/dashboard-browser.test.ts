// Rule: opened in a browser, the queue dashboard asks nothing of any origin but the service's (no font host, no CDN)
// and still works under its Content-Security-Policy: it draws its three queues and a delayed job, and the browser reports
// no policy violation. Any request elsewhere is recorded and refused, as on a closed network.
//
// Without /usr/bin/chromium the test fails and says how to install it, unless INTERLOCK_SKIP_BROWSER=1.
import type { Server } from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeBrowserTest, launchBrowser, serveForBrowser, SKIP_BROWSER } from '../support/browser.js';
import { signInInBrowser } from '../http/page-sessions.js';
import { startRig, TOKENS, type Rig } from '../http/rig.js';

describe.skipIf(SKIP_BROWSER)('the queue dashboard in Chromium', () => {
  let rig: Rig;
  let server: Server;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    rig = await startRig({ metrics: true });
    ({ server, base } = await serveForBrowser(rig.app));
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await closeBrowserTest({ browser, servers: [server], rig });
  });

  it('draws its queues and a job from this origin alone, with no policy violation', async () => {
    await rig.queue.queue.add('effect', { proposal: {}, recordedAt: 0 }, { jobId: 'dashboard-browser-job', delay: 3_600_000 });
    const context = await browser.newContext();
    const elsewhere: string[] = [];
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (new URL(url).origin === base) return route.continue();
      elsewhere.push(url);
      return route.abort();
    });
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/content security policy/i.test(message.text())) violations.push(message.text());
    });
    await signInInBrowser(page, base, TOKENS.operator);
    await page.goto(`${base}/admin/queues`);
    // The overview draws a card with a job count for each of the three queues, then the effects queue shows its job.
    await expect.poll(() => page.getByText(/^\d+ Jobs?$/).count(), { timeout: 15_000 }).toBe(3);
    await page.getByRole('link', { name: 'effects', exact: true }).first().click();
    await page.getByText('Gated effects to send').waitFor();
    await page.getByText(/^delayed$/i).first().click();
    await page.getByText('dashboard-browser-job').first().waitFor();
    expect(elsewhere).toEqual([]);
    expect(violations).toEqual([]);
    await context.close();
    await rig.queue.queue.remove('dashboard-browser-job');
  }, 60_000);
});
