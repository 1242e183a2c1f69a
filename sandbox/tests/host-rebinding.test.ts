// Rule: the sandbox answers only a request addressed (its Host header) to a name it answers: an IP address (v4, or v6
// in brackets) at any port, `localhost` and names under it, `*.dev.stripe.me` (the only names besides a loopback IP the
// official Stripe CLI takes as --api-base, stripe-cli.md §2), and the names given with --allowed-host (startSandbox:
// allowedHosts). A page at http://evil.example:PORT whose name is re-pointed to 127.0.0.1 (DNS rebinding) is
// same-origin with its own requests (Origin its own, Sec-Fetch-Site: same-origin), so the cross-site check lets it
// through, and the control routes and the API take no key it lacks: any other Host (or none) gets 421 in Stripe's
// error envelope, naming the Host and the --allowed-host that admits it, and changes and reads nothing; its websocket
// upgrade is answered 421 and closed, so it never joins a `stripe listen` session.
import { request } from 'node:http';
import net from 'node:net';
import { Command, CommanderError } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxOptionsFromFlags, withSandboxFlags } from '../cli.js';
import { pay, startHarness } from './helpers.js';
import type { SandboxFlags } from '../cli.js';
import type { Harness } from './helpers.js';

let h: Harness;
let named: Harness;
beforeAll(async () => {
  h = await startHarness();
  named = await startHarness({ allowedHosts: ['sandbox', 'Stripe.Internal.'] });
});
afterAll(async () => {
  await h.sandbox.close();
  await named.sandbox.close();
});

interface Answer {
  status: number;
  body: string;
}

/** A request to `harness`'s sandbox addressed to `host` (fetch will not set Host), with a key and `headers`. */
function send(harness: Harness, method: string, path: string, host: string, init: { body?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { Host: host, Authorization: 'Bearer sk_test_rebinding', 'Content-Type': 'application/x-www-form-urlencoded', ...init.headers };
    if (init.body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(init.body));
    const req = request({ host: harness.sandbox.host, port: harness.sandbox.port, method, path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/** Writes `head` on a raw connection; resolves with everything the sandbox sent once it closed the connection. */
function rawExchange(harness: Harness, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = net.connect(harness.sandbox.port, harness.sandbox.host, () => socket.write(head));
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
      // An accepted upgrade keeps the socket open: its 101 is the whole answer.
      if (text.startsWith('HTTP/1.1 101')) {
        socket.destroy();
        resolve(text);
      }
    });
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
  });
}

const port = () => h.sandbox.port;
/** What a rebinding page's browser sends: its own name, its own origin, same-origin. */
const rebound = () => ({ host: `evil.example:${port()}`, headers: { Origin: `http://evil.example:${port()}`, 'Sec-Fetch-Site': 'same-origin' } });

function refusal(answer: Answer): { type?: unknown; message?: unknown; request_log_url?: unknown } {
  return (JSON.parse(answer.body) as { error: { type?: unknown; message?: unknown; request_log_url?: unknown } }).error;
}

describe('a request addressed to a name the sandbox does not answer (DNS rebinding)', () => {
  it('is answered 421 in Stripe error envelope, naming the Host and the --allowed-host that admits it', async () => {
    const { host, headers } = rebound();
    const answer = await send(h, 'POST', '/_sandbox/reset', host, { headers });
    expect(answer.status).toBe(421);
    const error = refusal(answer);
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toContain(`"evil.example:${port()}"`);
    expect(error.message).toContain('--allowed-host evil.example');
    expect(error.request_log_url).toMatch(/^https:\/\/dashboard\.stripe\.com\/test\/logs\/req_/);
  });

  it('cannot reset the sandbox, set a fault, create a refund or read an object', async () => {
    const { host, headers } = rebound();
    const { intent, charge } = await pay(h.stripe, 'pm_card_visa');
    const before = await send(h, 'GET', '/_sandbox/requests', `127.0.0.1:${port()}`);
    const seen = (JSON.parse(before.body) as { data: unknown[] }).data.length;

    expect((await send(h, 'POST', '/_sandbox/reset', host, { headers })).status).toBe(421);
    const fault = await send(h, 'POST', '/_sandbox/faults/fail', host, { headers, body: 'method=POST&path=/v1/payment_intents&status=500&count=5' });
    expect(fault.status).toBe(421);
    const refund = await send(h, 'POST', '/v1/refunds', host, { headers, body: `charge=${charge}&amount=100` });
    expect(refund.status).toBe(421);
    for (const path of [`/v1/payment_intents/${intent.id}`, '/v1/payment_intents', '/v1/events', '/_sandbox/webhooks/deliveries', '/_sandbox/config']) {
      const read = await send(h, 'GET', path, host, { headers });
      expect([path, read.status]).toEqual([path, 421]);
      expect(read.body).not.toContain(intent.id);
      expect(read.body).not.toContain(charge);
    }

    // The payment is still there, no refund was made, and the next payment goes through (no fault was set).
    expect((await h.stripe.paymentIntents.retrieve(intent.id)).id).toBe(intent.id);
    expect((await h.stripe.refunds.list({ charge })).data).toEqual([]);
    expect((await pay(h.stripe, 'pm_card_visa')).intent.status).toBe('succeeded');
    // Not even the request log saw the refused API calls: it holds the retrieve, the list and the payment only.
    const after = await send(h, 'GET', '/_sandbox/requests', `127.0.0.1:${port()}`);
    expect((JSON.parse(after.body) as { data: Array<{ path: string }> }).data.slice(seen).map((entry) => entry.path)).toEqual([`/v1/payment_intents/${intent.id}`, '/v1/refunds', '/v1/payment_intents']);
  });

  it('refuses names that only look like its own, and a request with no Host', async () => {
    for (const host of ['sandbox:12111', `localhost.evil.example:${port()}`, `127.0.0.1.evil.example:${port()}`, `evil.dev.stripe.me.evil.example`, '[evil.example]', '::1']) {
      expect([host, (await send(h, 'GET', '/_sandbox/health', host)).status]).toEqual([host, 421]);
    }
    // HTTP/1.0 may leave Host out (Node answers an HTTP/1.1 request without one 400 itself).
    const answer = await rawExchange(h, 'GET /v1/payment_intents HTTP/1.0\r\nAuthorization: Bearer sk_test_rebinding\r\n\r\n');
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 421 Misdirected Request');
    expect(answer).toContain('no Host header');
    expect(answer).toContain('--allowed-host NAME');
  });

  it('answers its upgrade 421 and closes it: the page never joins a `stripe listen` session', async () => {
    const session = await send(h, 'POST', '/v1/stripecli/sessions', `127.0.0.1:${port()}`, { body: 'device_name=rebinding&websocket_features[]=webhooks' });
    const { websocket_id: id } = JSON.parse(session.body) as { websocket_id: string };
    const upgrade = (host: string) =>
      `GET /subscribe/acct_1SandboxInterlock?websocket_feature=webhook-payloads HTTP/1.1\r\nHost: ${host}\r\nOrigin: http://${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: stripecli-devproxy-v1\r\nWebsocket-Id: ${id}\r\n\r\n`;
    const refused = await rawExchange(h, upgrade(`evil.example:${port()}`));
    expect(refused.split('\r\n')[0]).toBe('HTTP/1.1 421 Misdirected Request');
    expect(refused).toContain('--allowed-host evil.example');
    const sessions = await send(h, 'GET', '/_sandbox/stripecli/sessions', `127.0.0.1:${port()}`);
    expect((JSON.parse(sessions.body) as { data: Array<{ websocket_id: string; connections: number }> }).data.find((s) => s.websocket_id === id)?.connections).toBe(0);
    // The same upgrade addressed to the sandbox's IP is taken.
    expect((await rawExchange(h, upgrade(`127.0.0.1:${port()}`))).split('\r\n')[0]).toBe('HTTP/1.1 101 Switching Protocols');
  });
});

describe('a request addressed to a name the sandbox answers', () => {
  it('is answered at an IP address, localhost or a name under it, or a *.dev.stripe.me name, at any port', async () => {
    for (const host of [`127.0.0.1:${port()}`, '127.0.0.1', '10.0.3.7:12111', '[::1]:12111', '[::ffff:127.0.0.1]', `localhost:${port()}`, 'LOCALHOST.', 'app.localhost:3000', 'api.dev.stripe.me:12111']) {
      expect([host, (await send(h, 'GET', '/v1/payment_intents', host)).status]).toEqual([host, 200]);
    }
  });

  it('is answered at a name given with allowedHosts (--allowed-host), whatever its case or final dot', async () => {
    for (const host of [`sandbox:${named.sandbox.port}`, 'SANDBOX', 'stripe.internal:12111', 'stripe.internal.']) {
      expect([host, (await send(named, 'GET', '/v1/payment_intents', host)).status]).toEqual([host, 200]);
    }
    expect((await send(named, 'GET', '/v1/payment_intents', 'sandboxes:12111')).status).toBe(421);
  });
});

describe('--allowed-host', () => {
  const parse = (args: string[]): SandboxFlags => {
    const command = withSandboxFlags(new Command('sandbox')).exitOverride().configureOutput({ writeErr: () => undefined });
    command.parse(args, { from: 'user' });
    return command.opts<SandboxFlags>();
  };

  it('is repeatable and becomes startSandbox allowedHosts', () => {
    expect(sandboxOptionsFromFlags(parse(['--allowed-host', 'sandbox', '--allowed-host', 'stripe.internal'])).allowedHosts).toEqual(['sandbox', 'stripe.internal']);
    expect(sandboxOptionsFromFlags(parse([])).allowedHosts).toBeUndefined();
  });

  it('refuses a value that is no host name, quoting it', () => {
    for (const value of ['sandbox:12111', 'http://sandbox', 'two words']) {
      expect(() => parse(['--allowed-host', value])).toThrow(CommanderError);
      expect(() => parse(['--allowed-host', value])).toThrow(JSON.stringify(value));
    }
  });
});
