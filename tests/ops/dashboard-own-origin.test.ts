// Rule: the queue dashboard's page names no other origin (bull-board's index links Google's fonts: opening the board
// would tell Google, and hang on a closed network), nor do the stylesheets it loads, and its Content-Security-Policy
// lets the browser fetch from this service only. A bull-board release that adds an address elsewhere fails here.
// The same page in Chromium: dashboard-browser.test.ts.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { withoutOtherOrigins } from '../../webhooks/ops/dashboard.js';
import { bearer, rigSuite, TOKENS } from '../http/rig.js';

/** Every address in `text` that names a host (absolute or scheme-relative). */
const addressesElsewhere = (text: string): string[] => text.match(/(?:[a-z][a-z0-9+.-]*:)?\/\/[^\s"'()<>]+/gi) ?? [];

describe('the queue dashboard loads nothing from another origin', () => {
  const rig = rigSuite({ metrics: true });

  it('serves a page that names no other host, whose stylesheets name none either, with a CSP of this origin only', async () => {
    const page = await request(rig.app).get('/admin/queues').set(bearer(TOKENS.operator));
    expect(page.status).toBe(200);
    expect(page.text).toContain('<div id="root">');
    expect(addressesElsewhere(page.text)).toEqual([]);
    const policy = String(page.headers['content-security-policy'] ?? '');
    const csp = new Map(policy.split(';').map((part) => part.trim().split(/\s+/)).map(([name, ...sources]) => [name, sources]));
    expect(csp.get('default-src'), policy).toEqual(["'self'"]);
    expect(csp.get('frame-ancestors')).toEqual(["'none'"]);
    // No fetch directive names a host or a scheme: what the board loads comes from here or nowhere.
    for (const [name, sources] of csp) if (name?.endsWith('-src')) for (const source of sources) expect(["'self'", "'none'", "'unsafe-inline'"], `${name} ${source}`).toContain(source);

    // The page's own files are still there, and the stylesheets it loads import nothing from elsewhere.
    const files = [...page.text.matchAll(/<(?:link|script)\b[^>]*?\b(?:href|src)="([^"]+)"/g)].map((match) => match[1] ?? '');
    const stylesheets = [...page.text.matchAll(/<link\b[^>]*?\bhref="([^"]+\.css)"/g)].map((match) => match[1] ?? '');
    expect(files.some((file) => file.endsWith('.js'))).toBe(true);
    expect(stylesheets.length).toBeGreaterThan(0);
    for (const file of files) {
      const answer = await request(rig.app).get(`/admin/queues/${file}`).set(bearer(TOKENS.operator));
      expect(answer.status, file).toBe(200);
    }
    for (const file of stylesheets) {
      const css = (await request(rig.app).get(`/admin/queues/${file}`).set(bearer(TOKENS.operator))).text;
      expect(addressesElsewhere(css), file).toEqual([]);
    }
  });

  it('takes out stylesheets, preconnects and scripts from elsewhere, keeps the page’s own, and leaves a page without any as it is', () => {
    const own = '<head><base href="/admin/queues/" /><link rel="icon" href="static/images/logo.svg"><link href="static/css/main.css" rel="stylesheet"></head><script defer src="static/js/main.js"></script>';
    expect(withoutOtherOrigins(own)).toBe(own);
    const elsewhere = [
      '<link href="https://fonts.googleapis.com/css2?family=IBM+Plex+Sans" rel="stylesheet">',
      "<link rel='preconnect' href='//fonts.gstatic.com' crossorigin>",
      '<link rel="preload" as="font" HREF = "HTTP://cdn.example/font.woff2" />',
      '<script src="https://unpkg.com/lib.js"></script>',
    ];
    const served = withoutOtherOrigins(`<head>${elsewhere.join('\n')}${own}`);
    expect(addressesElsewhere(served)).toEqual([]);
    expect(served).toContain(own);
  });
});
