// Rule: a STRIPE_API_BASE whose server answers, and not as Stripe, to a request Stripe answers (another web service's
// HTML 404 page, a 200 with JSON of its own) serves no Stripe API: the process is misconfigured on its own and /readyz
// answers 503 unready, so a rollout with a wrong STRIPE_API_BASE stops there. A 5xx that is not Stripe's (a proxy's
// HTML 502 or JSON 503 in front of a Stripe that is down) is an outage every process meets alike: advisory, 200
// degraded.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/main.js';
import { removePrefixes, testConfig } from '../support/harness.js';
import { TEST_KEY } from '../stripe/stripe-support.js';

const dir = mkdtempSync(join(tmpdir(), 'readyz-not-stripe-'));
const prefix = `trn${randomBytes(5).toString('hex')}`;
const services: Service[] = [];
const servers: Server[] = [];

type Readiness = { status: string; checks: { name: string; ok: boolean; detail: string | null; advisory?: boolean }[] };

/** A server at STRIPE_API_BASE answering every request with `status`, `type` and `body`. */
async function foreignServer(status: number, type: string, body: string): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(status, { 'content-type': type });
    res.end(body);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function readyzBehind(status: number, type: string, body: string): Promise<{ status: number; body: Readiness; stripe: Readiness['checks'][number] | undefined }> {
  const base = await foreignServer(status, type, body);
  const service = await startService(testConfig({ keyPrefix: prefix, host: '127.0.0.1', port: 0, dataDir: dir, stripeSecretKey: TEST_KEY, stripeApiBase: base, apiTokens: 'sam:support:itk_support_notstripe0123456789' }), ['api']);
  services.push(service);
  const answer = await fetch(`${service.url ?? ''}/readyz`);
  const read = (await answer.json()) as Readiness;
  return { status: answer.status, body: read, stripe: read.checks.find((check) => check.name === 'stripe') };
}

afterAll(async () => {
  for (const service of services) await service.close();
  for (const server of servers) server.close();
  await removePrefixes([prefix]);
  rmSync(dir, { recursive: true, force: true });
});

describe('/readyz with STRIPE_API_BASE at a server that is not Stripe', { timeout: 60_000 }, () => {
  it("another service's HTML 404 page makes the process unready (503), naming STRIPE_API_BASE and the status", async () => {
    const { status, body, stripe } = await readyzBehind(404, 'text/html', '<html><body><h1>Not Found</h1></body></html>');
    expect([status, body.status]).toEqual([503, 'unready']);
    expect(stripe?.ok).toBe(false);
    expect(stripe?.advisory).toBeUndefined();
    expect(stripe?.detail).toContain('STRIPE_API_BASE');
    expect(stripe?.detail).toContain('HTTP 404');
  });

  it('a 200 with JSON of its own (no Stripe object) makes the process unready (503)', async () => {
    const { status, body, stripe } = await readyzBehind(200, 'application/json', '{"ok":true}');
    expect([status, body.status]).toEqual([503, 'unready']);
    expect(stripe?.advisory).toBeUndefined();
    expect(stripe?.detail).toContain('HTTP 200');
  });

  it("a proxy's HTML 502 page or JSON 503 (Stripe down behind it) is advisory: 200 degraded", async () => {
    for (const [code, type, text] of [
      [502, 'text/html', '<html><body><h1>502 Bad Gateway</h1></body></html>'],
      [503, 'application/json', '{"message":"Service Unavailable"}'],
    ] as const) {
      const { status, body, stripe } = await readyzBehind(code, type, text);
      expect([code, status, body.status]).toEqual([code, 200, 'degraded']);
      expect(stripe).toMatchObject({ ok: false, advisory: true });
    }
  });
});
