// Debian's Chromium for the page's browser tests, driven by playwright-core: headless, no sandbox (tests run as
// root), background networking off (the network is closed). Without /usr/bin/chromium a browser test fails and says
// how to install it, unless INTERLOCK_SKIP_BROWSER=1 says this machine has no browser on purpose (then it is skipped).
import { existsSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-default-apps', '--no-first-run', '--disable-sync'];

/** Whether the browser is installed. */
export const BROWSER_PRESENT = existsSync(CHROMIUM);
/** Whether browser tests are skipped: no browser, and INTERLOCK_SKIP_BROWSER=1 says so on purpose. */
export const SKIP_BROWSER = !BROWSER_PRESENT && process.env.INTERLOCK_SKIP_BROWSER === '1';
/** What a browser test says when the browser is missing. */
export const BROWSER_MISSING = `${CHROMIUM} is missing: install Debian's browser (apt-get install -y chromium; .ci/run does it), or set INTERLOCK_SKIP_BROWSER=1 on a machine that has none on purpose.`;

/** The browser, launched; throws BROWSER_MISSING without one. */
export function launchBrowser(): Promise<Browser> {
  if (!BROWSER_PRESENT) throw new Error(BROWSER_MISSING);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
}

/** `app` served on a free port of the loopback address, and the base URL a browser opens its pages at. */
export async function serveForBrowser(app: RequestListener): Promise<{ server: Server; base: string }> {
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** Closes what a browser test started, each part only if it was started: the browser, then its servers, then its rig. */
export async function closeBrowserTest(parts: { browser: Browser | undefined; servers: readonly (Server | undefined)[]; rig: { close(): Promise<void> } | undefined }): Promise<void> {
  await parts.browser?.close();
  for (const server of parts.servers) await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  await parts.rig?.close();
}
