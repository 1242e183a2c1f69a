// Rule: in a real browser (Debian's Chromium), an approver signed in to the page dismisses an inbox item only with
// their own token typed into the form's "Your token (to sign this action)" field: sent with a wrong one, the item is
// drawn again with nothing recorded, the note typed kept in the form and the token field empty; sent again with the
// right one, the item shows closed by the approver. The cookie the browser holds is the same both times.
import type { Server } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createItemMaker, type ItemMaker } from '../http/inbox-items.js';
import { startRig, TOKENS, type Rig } from '../http/rig.js';
import { closeBrowserTest, launchBrowser, serveForBrowser, SKIP_BROWSER } from '../support/browser.js';

describe.skipIf(SKIP_BROWSER)('an inbox form in Chromium', () => {
  let rig: Rig | undefined;
  let make: ItemMaker | undefined;
  let server: Server | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let base: string;

  beforeAll(async () => {
    rig = await startRig();
    make = await createItemMaker(rig);
    ({ server, base } = await serveForBrowser(rig.app));
    browser = await launchBrowser();
    page = await (await browser.newContext()).newPage();
  }, 60_000);

  afterAll(async () => {
    await make?.close();
    await closeBrowserTest({ browser, servers: [server], rig });
  });

  it('takes the dismissal with the approver’s own token typed in, not without it', async () => {
    const { item } = await (make as ItemMaker).stale();
    await page.goto(`${base}/ui/sign-in`);
    await page.getByLabel('API token').fill(TOKENS.approver);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/ui/inbox`);
    await page.goto(`${base}/ui/inbox/${item}`);
    const dismiss = page.locator(`form[action="/ui/inbox/${item}/dismiss"]`);
    await dismiss.getByLabel('Why').fill('Customer called, refunded by hand');
    const token = dismiss.getByLabel('Your token (to sign this action)');
    expect(await token.count()).toBe(1);
    expect(await token.getAttribute('type')).toBe('password');
    await token.fill(TOKENS.danaApprover);
    await dismiss.getByRole('button', { name: 'Dismiss' }).click();
    await page.waitForLoadState();
    expect(await page.getByRole('alert').textContent()).toContain('That is not your token');
    expect(await (rig as Rig).stores.inbox.get(item)).toMatchObject({ closure: null });
    const again = page.locator(`form[action="/ui/inbox/${item}/dismiss"]`);
    expect(await again.getByLabel('Why').inputValue()).toBe('Customer called, refunded by hand');
    expect(await again.getByLabel('Your token (to sign this action)').inputValue()).toBe('');
    expect(await page.content()).not.toContain(TOKENS.danaApprover);
    await again.getByLabel('Your token (to sign this action)').fill(TOKENS.approver);
    await again.getByRole('button', { name: 'Dismiss' }).click();
    await page.waitForURL(`${base}/ui/inbox/${item}?done=dismiss`);
    expect(await page.getByRole('heading', { name: 'Closed' }).count()).toBe(1);
    expect(await (rig as Rig).stores.inbox.get(item)).toMatchObject({ closure: { action: 'dismiss', by: { name: 'alex', role: 'approver' } } });
  });
});
