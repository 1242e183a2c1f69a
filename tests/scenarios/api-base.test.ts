// Rule: with a Stripe test key, the scenarios send every Stripe request to STRIPE_API_BASE when it is set (a proxy in
// front of Stripe), as the service does, and the page names it; without a key they run against sandboxes of their
// own and say that STRIPE_API_BASE goes unused, rather than drop it in silence.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../cli/run-cli.js';

const DISPUTE_CELL = ['scenario', 'stripe-dispute', '--delays', 'fast', '--rows', 'crash_after_send_chargeback_during_outage', '--columns', 'no_check'];

/**
 * One dispute cell in test mode through a proxy that records what reaches it and answers as Stripe does when it
 * refuses a request; `spell` writes STRIPE_API_BASE from the proxy's origin.
 */
async function throughProxy(spell: (origin: string) => string) {
  const seen: { method: string; url: string; auth: string }[] = [];
  const proxy = createServer((request: IncomingMessage, response) => {
    seen.push({ method: request.method ?? '', url: request.url ?? '', auth: request.headers.authorization ?? '' });
    request.resume();
    response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { type: 'invalid_request_error', message: 'refused by the recording proxy' } }));
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  const out = tempDir('scenario-api-base');
  try {
    const run = await runCli([...DISPUTE_CELL, '--out', out.dir], { REDIS_URL: undefined, STRIPE_SECRET_KEY: 'sk_test_recordedbyproxy', STRIPE_API_BASE: spell(origin) }, { timeoutMs: 100_000 });
    return { seen, run, origin, page: readFileSync(join(out.dir, 'stripe_dispute.md'), 'utf8') };
  } finally {
    proxy.close();
    out.remove();
  }
}

describe('interlock scenario and STRIPE_API_BASE', () => {
  it('in test mode sends its Stripe requests through STRIPE_API_BASE, and the page says so', { timeout: 120_000 }, async () => {
    const { seen, run, origin, page } = await throughProxy((base) => base);
    expect(seen.map((request) => `${request.method} ${request.url}`), run.stderr).toContain('POST /v1/payment_intents');
    expect(seen[0]?.auth).toBe(`Basic ${Buffer.from('sk_test_recordedbyproxy:').toString('base64')}`);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain('refused by the recording proxy');
    expect(page).toContain(`against Stripe test mode through ${origin} (STRIPE_API_BASE)`);
  });

  it('sends to the origin the service takes from STRIPE_API_BASE, an empty query or fragment on it included', { timeout: 120_000 }, async () => {
    // The service reads only the scheme, host and port of http://HOST:PORT/?#; the harness must not send to "/?".
    const { seen, run, origin, page } = await throughProxy((base) => `${base}/?#`);
    expect(seen.map((request) => `${request.method} ${request.url}`), run.stderr).toContain('POST /v1/payment_intents');
    expect(page).toContain(`against Stripe test mode through ${origin} (STRIPE_API_BASE)`);
  });

  it('without a test key says STRIPE_API_BASE goes unused (each scenario runs a sandbox of its own)', { timeout: 60_000 }, async () => {
    const cell = DISPUTE_CELL.map((word, index) => (DISPUTE_CELL[index - 1] === '--rows' ? 'no_such_row' : word));
    const run = await runCli([...cell, '--out', '/tmp/interlock-api-base-never-written'], { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined, STRIPE_API_BASE: 'http://127.0.0.1:12111' }, { timeoutMs: 20_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('STRIPE_API_BASE (http://127.0.0.1:12111) is not used: without STRIPE_SECRET_KEY each scenario runs against a sandbox of its own.');
  });
});
