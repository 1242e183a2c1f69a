// The page in a real browser (issue 13 §3, §5): Debian's Chromium driven by playwright-core signs in with a token,
// finds a committed refund and a refused one in the list, opens each timeline, checks its entries and the final
// money against what the API answers, downloads the receipt and verifies it with the CLI, and runs axe-core on every
// page (labels, headings, contrast: no violations). Screenshots go to test-artifacts/ui-browser (not committed);
// with INTERLOCK_DOCS_SCREENSHOT=1 the committed refund's timeline is also saved as docs/timeline.png.
//
// Without /usr/bin/chromium the test fails and says how to install it, unless INTERLOCK_SKIP_BROWSER=1 says this
// machine has no browser on purpose; then it is skipped with that reason.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicKeyPem } from '../../src/interlock.js';
import { closeBrowserTest, launchBrowser, serveForBrowser, SKIP_BROWSER } from '../support/browser.js';
import { approvalBody, bearer, refundBody, startRig, TOKENS, uid, type Rig } from '../http/rig.js';

const ROOT = join(import.meta.dirname, '..', '..');
const ARTIFACTS = join(ROOT, 'test-artifacts', 'ui-browser');
const run = promisify(execFile);
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

type AxeViolation = { id: string; impact: string | null; help: string; nodes: { target: string[] }[] };

/** axe-core in the page, over WCAG 2.1 A and AA and axe's best practices (which include heading order). */
async function accessibilityViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated through the DevTools protocol, which the page's CSP (no scripts at all) does not govern.
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () => {
    const page = globalThis as unknown as { axe: { run(context: unknown, options: unknown): Promise<{ violations: AxeViolation[] }> }; document: unknown };
    return page.axe.run(page.document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
  });
  return result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, nodes: violation.nodes.map((node) => ({ target: node.target })) }));
}

describe.skipIf(SKIP_BROWSER)('the page in Chromium', () => {
  let rig: Rig;
  let server: Server;
  let base: string;
  let browser: Browser;
  let page: Page;
  let dir: string;
  let committed: string;
  let refused: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'interlock-ui-'));
    mkdirSync(ARTIFACTS, { recursive: true });
    rig = await startRig({ worker: true, metrics: true });
    const pi = `pi_b${uid()}`;
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    const approval = approvalBody({ scope: `payment:${pi}`, cap_cents: 5_000 });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const one = await request(rig.app)
      .post('/v1/refunds?wait=10')
      .set(bearer(TOKENS.support))
      .send(refundBody({ payment_intent: pi, approval: approval.id, amount: 2_000, decision: { model: 'support-model', text: 'Arrived damaged; refund $20.' } }));
    expect(one.body.outcome).toBe('COMMITTED');
    committed = one.body.effect_id;
    // Decided on "no chargebacks"; by the time the gate re-reads, the payment has one.
    rig.target.world.set(`payment:${pi}`, { chargebacks: ['du_browser'], refunded_by_others: 0 });
    const recorded = await rig.queue.propose({ requestId: `case-${uid()}`, agent: 'sam', approval: approval.id, premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent: pi, amount: 1_000 } });
    expect((await rig.queue.waitFor(recorded.effectId, 10_000))?.outcome).toBe('REFUSED:stale_premise');
    refused = recorded.effectId;
    // A request id of the longest kind (200 characters, no space), which must not push the list past the window.
    const long = await rig.queue.propose({ requestId: `case-${'x'.repeat(195)}`, agent: 'sam', approval: approval.id, premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent: pi, amount: 500 } });
    expect((await rig.queue.waitFor(long.effectId, 10_000))?.outcome).toBe('REFUSED:stale_premise');
    ({ server, base } = await serveForBrowser(rig.app));
    browser = await launchBrowser();
    const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1100, height: 900 } });
    page = await context.newPage();
  }, 90_000);

  afterAll(async () => {
    await closeBrowserTest({ browser, servers: [server], rig });
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('signs in with a token, and the sign-in form is accessible', async () => {
    await page.goto(`${base}/ui`);
    expect(new URL(page.url()).pathname).toBe('/ui/sign-in');
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, 'sign-in.png') });
    await page.getByLabel('API token').fill(TOKENS.operator);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/ui`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Effects');
    expect(await page.getByText('Signed in as').textContent()).toContain('ops');
    const cookies = await page.context().cookies();
    expect(cookies.find((item) => item.name === 'interlock_session')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
  });

  it('lists both refunds with open alerts at the top, and the list is accessible', async () => {
    expect(await page.getByRole('heading', { name: 'Open alerts' }).count()).toBe(1);
    const committedRow = page.locator('tr', { has: page.locator(`a[href="/ui/effects/${committed}"]`) });
    const refusedRow = page.locator('tr', { has: page.locator(`a[href="/ui/effects/${refused}"]`) });
    expect(await committedRow.locator('td').nth(7).textContent()).toBe('COMMITTED');
    expect(await refusedRow.locator('td').nth(7).textContent()).toBe('REFUSED:stale_premise');
    // Every column stays inside the window, the longest request id wrapping in its cell.
    const outcome = await page.locator('th', { hasText: 'Outcome' }).boundingBox();
    expect((outcome?.x ?? Infinity) + (outcome?.width ?? 0), 'the right edge of the Outcome column').toBeLessThanOrEqual(page.viewportSize()?.width ?? 0);
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, 'effects.png'), fullPage: true });
    await page.getByLabel('Outcome').selectOption('REFUSED:stale_premise');
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(await page.locator(`a[href="/ui/effects/${committed}"]`).count()).toBe(0);
    expect(await page.locator(`a[href="/ui/effects/${refused}"]`).count()).toBe(1);
  });

  it('opens the committed refund: its four entries, each signed, the money returned, and a receipt the CLI verifies', async () => {
    await page.goto(`${base}/ui`);
    await page.locator(`a[href="/ui/effects/${committed}"]`).click();
    await page.waitForURL(`${base}/ui/effects/${committed}`);
    const kinds = await page.locator('.timeline > li h3').allTextContents();
    expect(kinds.map((text) => text.replace(/^\d+\.\s*/, '').split(' ')[0])).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
    const signatures = await page.locator('.timeline .sig').allTextContents();
    expect(signatures).toHaveLength(4);
    for (const text of signatures) expect(text).toMatch(/^(signed, verified|covered by the signature of entry \d)$/);
    const api = await request(rig.app).get(`/v1/effects/${committed}`).set(bearer(TOKENS.auditor));
    expect(api.body.final_money.status).toBe('returned');
    expect(await page.getByTestId('final-money-status').textContent()).toBe('returned');
    expect(await page.getByTestId('outcome').textContent()).toBe('COMMITTED');
    expect(await page.getByText('Arrived damaged; refund $20.').count()).toBe(1);
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, 'timeline-committed.png'), fullPage: true });
    if (process.env.INTERLOCK_DOCS_SCREENSHOT === '1') {
      await page.setViewportSize({ width: 900, height: 1100 });
      await page.screenshot({ path: join(ROOT, 'docs', 'timeline.png') });
      await page.setViewportSize({ width: 1100, height: 900 });
    }

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download the receipt' }).click()]);
    const file = join(dir, 'receipt.json');
    await download.saveAs(file);
    const key = join(dir, 'public.pem');
    writeFileSync(key, publicKeyPem(rig.stores.signingKey));
    const verified = await run(process.execPath, [join(ROOT, 'bin', 'interlock.js'), 'receipt', 'verify', file, '--public-key', key], { cwd: ROOT, env: { ...process.env, INTERLOCK_LOG_LEVEL: 'silent' } });
    expect(JSON.parse(verified.stdout)).toMatchObject({ valid: true, effectId: committed, outcome: 'COMMITTED', happened: true, happenedOnce: true });
  });

  it('opens the refused refund: the premise that changed, nothing sent, and its receipt verifies too', async () => {
    await page.goto(`${base}/ui/effects/${refused}`);
    const kinds = await page.locator('.timeline > li h3').allTextContents();
    expect(kinds.map((text) => text.replace(/^\d+\.\s*/, '').split(' ')[0])).toEqual(['PROPOSED', 'AUTHORIZED', 'REFUSED']);
    expect(await page.getByTestId('outcome').textContent()).toBe('REFUSED:stale_premise');
    const refusedEntry = page.locator('.timeline > li').nth(2);
    expect(await refusedEntry.textContent()).toContain('chargebacks: was [], now ["du_browser"]');
    const api = await request(rig.app).get(`/v1/effects/${refused}`).set(bearer(TOKENS.auditor));
    expect(await page.getByTestId('final-money-status').textContent()).toBe(String(api.body.final_money.status).replace(/_/g, ' '));
    expect(await page.getByTestId('exposure').textContent()).toBe('none');
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, 'timeline-refused.png'), fullPage: true });

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download the receipt' }).click()]);
    const file = join(dir, 'refused.json');
    await download.saveAs(file);
    const key = join(dir, 'public.pem');
    const verified = await run(process.execPath, [join(ROOT, 'bin', 'interlock.js'), 'receipt', 'verify', file, '--public-key', key], { cwd: ROOT, env: { ...process.env, INTERLOCK_LOG_LEVEL: 'silent' } });
    expect(JSON.parse(verified.stdout)).toMatchObject({ valid: true, effectId: refused, outcome: 'REFUSED:stale_premise', happened: false });
  });

  it('signs out with the form (its CSRF token), and the page asks for a token again', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${base}/ui/sign-in`);
    await page.goto(`${base}/ui/effects/${committed}`);
    expect(new URL(page.url()).pathname).toBe('/ui/sign-in');
  });
});
