// Issue 7, point 1: the official `stripe listen` (CLI 1.52.0) against the sandbox. Each test runs its own sandbox,
// receiver and CLI process, so the files' tests run concurrently and the CLI's fixed waits (a 10 s pause before
// it replaces an expired session) overlap instead of adding up.
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { createInterface } from 'node:readline';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { API_VERSION } from '../core/event-bus.js';
import { startSandbox } from '../index.js';
import { eventually, startReceiver, stripeFor } from './helpers.js';
import { apiBase, cliEnvironment, runStripe, startListen, stripeBinary, tempConfigDir } from './stripe-cli-driver.js';
import type { Delivery, Sandbox } from '../index.js';
import type { Receiver } from './helpers.js';
import type { Listener, TempDir } from './stripe-cli-driver.js';

interface Setup {
  sandbox: Sandbox;
  stripe: Stripe;
  receiver: Receiver;
  config: TempDir;
  env: NodeJS.ProcessEnv;
  listeners: Listener[];
  /** Starts `stripe listen` forwarding to the receiver, waits for its Ready line and returns the secret it shows. */
  listen(extra?: readonly string[], forwardTo?: string): Promise<{ listener: Listener; secret: string; session: string }>;
  close(): Promise<void>;
}

async function setUp(options: { reconnectDelaySeconds?: number } = {}): Promise<Setup> {
  const sandbox = await startSandbox({ port: 0, delays: 'fast' });
  if (options.reconnectDelaySeconds !== undefined) await sandbox.control.configure({ stripecli_reconnect_delay_seconds: options.reconnectDelaySeconds });
  const receiver = await startReceiver();
  const config = tempConfigDir();
  const env = cliEnvironment(config.path, { STRIPE_DEVICE_NAME: 'interlock-test' });
  const listeners: Listener[] = [];
  const setup: Setup = {
    sandbox,
    stripe: stripeFor(sandbox),
    receiver,
    config,
    env,
    listeners,
    async listen(extra = ['--all-snapshot'], forwardTo = receiver.url) {
      const before = new Set((await sandbox.control.cliSessions()).map((s) => s.websocket_id));
      const listener = startListen(['--api-base', apiBase(sandbox.port), '--skip-update', '--forward-to', forwardTo, ...extra], env);
      listeners.push(listener);
      const ready = await listener.waitFor(/Ready!/);
      const secret = /(whsec_\w+)/.exec(ready)?.[1] ?? '';
      const session = (await sandbox.control.cliSessions()).find((s) => !before.has(s.websocket_id) && s.connected)?.websocket_id ?? '';
      return { listener, secret, session };
    },
    async close() {
      await Promise.all(listeners.map((l) => l.stop()));
      await receiver.close();
      await sandbox.close();
      config.remove();
    },
  };
  return setup;
}

/** Every forwarded request verifies against the session secret, exactly as a user's handler would check it. */
function verifiedEvents(stripe: Stripe, receiver: Receiver, secret: string): Stripe.Event[] {
  return receiver.received.map((r) => stripe.webhooks.constructEvent(r.body, String(r.headers['stripe-signature']), secret));
}

async function sessionDeliveries(sandbox: Sandbox, session: string, settled: (list: Delivery[]) => boolean): Promise<Delivery[]> {
  return eventually(() => sandbox.control.deliveries({ endpoint: session }), settled, 10_000);
}

describe('stripe listen against the sandbox (CLI 1.52.0)', () => {
  it.concurrent('forwards every event signed with the session secret (constructEvent accepts each); event_ack and webhook_response land in the delivery list', async () => {
    const s = await setUp();
    try {
      const printed = await runStripe(['listen', '--api-base', apiBase(s.sandbox.port), '--print-secret'], s.env);
      expect(printed.code).toBe(0);
      const { secret, session } = await s.listen();
      expect(printed.stdout.trim()).toBe(secret);
      expect(secret).toMatch(/^whsec_/);
      const intent = await s.stripe.paymentIntents.create({ amount: 2_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
      await s.stripe.refunds.create({ payment_intent: intent.id, amount: 500 });
      const expected = ['payment_intent.created', 'charge.succeeded', 'payment_intent.succeeded', 'refund.created', 'charge.refunded'];
      await eventually(async () => s.receiver.received.length, (n) => n >= expected.length, 10_000);
      const events = verifiedEvents(s.stripe, s.receiver, secret);
      expect(new Set(events.map((e) => e.type))).toEqual(new Set(expected));
      expect(() => verifiedEvents(s.stripe, s.receiver, 'whsec_not_the_session_secret')).toThrow(Stripe.errors.StripeSignatureVerificationError);
      const deliveries = await sessionDeliveries(s.sandbox, session, (list) => list.length === expected.length && list.every((d) => (d.cli?.responses.length ?? 0) > 0));
      for (const d of deliveries) {
        expect(d).toMatchObject({ state: 'delivered', url: s.receiver.url });
        expect(d.cli?.acked_at).toBeGreaterThan(0);
        expect(d.cli?.responses).toEqual([expect.objectContaining({ status: 200, forward_url: s.receiver.url, endpoint_api_version: null })]);
        expect(d.attempts.at(-1)?.status).toBe(200);
      }
    } finally {
      await s.close();
    }
  });

  it.concurrent('many events through one session leave no listener behind on the world\'s reset signal (Node warns past ten)', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    const s = await setUp();
    try {
      const { session } = await s.listen();
      for (let index = 0; index < 15; index += 1) await s.stripe.paymentIntents.create({ amount: 500, currency: 'usd' });
      await sessionDeliveries(s.sandbox, session, (list) => list.length === 15 && list.every((d) => d.state === 'delivered'));
      await new Promise((wait) => setImmediate(wait));
      expect(warnings.filter((warning) => warning.includes('abort listeners'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await s.close();
    }
  });

  it.concurrent('the delivery rules apply to a CLI session: drop, duplicate, delay, and hold released in reverse', async () => {
    const s = await setUp();
    try {
      const { secret, session } = await s.listen();
      await s.sandbox.control.addRule({ action: 'drop', type: 'payment_intent.created', endpoint: session });
      await s.sandbox.control.addRule({ action: 'duplicate', type: 'charge.succeeded', endpoint: session });
      await s.sandbox.control.addRule({ action: 'delay', type: 'payment_intent.succeeded', endpoint: session, delay_ms: 400 });
      await s.stripe.paymentIntents.create({ amount: 1_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
      await eventually(async () => s.receiver.received.length, (n) => n === 3, 10_000);
      const types = verifiedEvents(s.stripe, s.receiver, secret).map((e) => e.type);
      expect(types.sort()).toEqual(['charge.succeeded', 'charge.succeeded', 'payment_intent.succeeded']);
      const sentAt = async (type: string): Promise<number> => (await s.sandbox.control.deliveries({ endpoint: session, type }))[0]?.attempts[0]?.at ?? 0;
      expect((await sentAt('payment_intent.succeeded')) - (await sentAt('charge.succeeded'))).toBeGreaterThanOrEqual(350);
      expect(await s.sandbox.control.deliveries({ endpoint: session, state: 'dropped' })).toHaveLength(1);

      await s.sandbox.control.addRule({ action: 'hold', endpoint: session, count: 2 });
      const first = await s.stripe.customers.create({ name: 'first' });
      const second = await s.stripe.customers.create({ name: 'second' });
      expect(await s.sandbox.control.deliveries({ endpoint: session, state: 'held' })).toHaveLength(2);
      await s.sandbox.control.release('reverse', session);
      const released = await sessionDeliveries(s.sandbox, session, (list) => list.filter((d) => d.type === 'customer.created').every((d) => d.cli?.acked_at !== null && d.cli?.acked_at !== undefined));
      const ackedAt = (customer: string): number => {
        const events = released.filter((d) => d.type === 'customer.created');
        const match = events.find((d) => s.receiver.received.some((r) => r.event.id === d.event && (JSON.parse(r.body) as { data: { object: { id: string } } }).data.object.id === customer));
        return match?.cli?.acked_at ?? 0;
      };
      await eventually(async () => s.receiver.received.length, (n) => n === 5, 10_000);
      expect(ackedAt(second.id)).toBeLessThanOrEqual(ackedAt(first.id));
      expect(ackedAt(second.id)).toBeGreaterThan(0);
    } finally {
      await s.close();
    }
  });

  it.concurrent('--events filters on the client: every event is acked, only the named ones are forwarded; -H adds headers', async () => {
    const s = await setUp();
    try {
      const { secret, session } = await s.listen(['--events', 'charge.succeeded', '-H', 'X-Interlock-Probe: listen']);
      await s.stripe.paymentIntents.create({ amount: 1_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
      const deliveries = await sessionDeliveries(s.sandbox, session, (list) => list.length === 3 && list.every((d) => d.state === 'delivered'));
      await eventually(async () => s.receiver.received.length, (n) => n === 1, 10_000);
      expect(verifiedEvents(s.stripe, s.receiver, secret).map((e) => e.type)).toEqual(['charge.succeeded']);
      expect(s.receiver.received[0]?.headers['x-interlock-probe']).toBe('listen');
      const forwarded = (await sessionDeliveries(s.sandbox, session, (list) => list.some((d) => (d.cli?.responses.length ?? 0) > 0))).filter((d) => (d.cli?.responses.length ?? 0) > 0);
      expect(forwarded.map((d) => d.type)).toEqual(['charge.succeeded']);
      expect(deliveries.every((d) => (d.cli?.acked_at ?? 0) > 0)).toBe(true);
    } finally {
      await s.close();
    }
  });

  it.concurrent('--latest forwards the copy rendered at the latest version, and the Ready line names it', async () => {
    const s = await setUp();
    try {
      const { listener, secret, session } = await s.listen(['--all-snapshot', '--latest']);
      expect(listener.stderr.join('\n')).toContain(`You are using Stripe API Version [${API_VERSION}]`);
      await s.stripe.customers.create({ name: 'latest' });
      await eventually(async () => s.receiver.received.length, (n) => n === 1, 10_000);
      expect(verifiedEvents(s.stripe, s.receiver, secret).map((e) => e.type)).toEqual(['customer.created']);
      const [delivery] = await sessionDeliveries(s.sandbox, session, (list) => list.length === 1 && (list[0]?.cli?.responses.length ?? 0) > 0);
      expect(delivery?.cli?.responses.map((r) => r.endpoint_api_version)).toEqual([API_VERSION]);
    } finally {
      await s.close();
    }
  });

  it.concurrent('-a forwards to the path of each configured webhook endpoint, on the --forward-to host', async () => {
    const s = await setUp();
    const direct = await startReceiver();
    try {
      const endpointUrl = new URL(direct.url);
      endpointUrl.pathname = '/hooks/stripe';
      endpointUrl.search = '?x=1';
      await s.stripe.webhookEndpoints.create({ url: endpointUrl.toString(), enabled_events: ['customer.created'] });
      const host = new URL(s.receiver.url).origin;
      const { secret, session } = await s.listen(['-a', '--all-snapshot'], host);
      await s.stripe.customers.create({ name: 'configured' });
      await s.stripe.products.create({ name: 'not configured' });
      const deliveries = await sessionDeliveries(s.sandbox, session, (list) => list.length === 2 && list.some((d) => (d.cli?.responses.length ?? 0) > 0));
      expect(deliveries.flatMap((d) => d.cli?.responses.map((r) => [d.type, r.forward_url]) ?? [])).toEqual([['customer.created', `${host}/hooks/stripe?x=1`]]);
      expect(verifiedEvents(s.stripe, s.receiver, secret).map((e) => e.type)).toEqual(['customer.created']);
      // The endpoint itself is still served by the sandbox, with its own secret.
      await eventually(async () => direct.received.length, (n) => n === 1, 10_000);
    } finally {
      await s.close();
      await direct.close();
    }
  });

  it.concurrent('re-dials every reconnect_delay with the same websocket id and secret; events in the gaps arrive exactly once', async () => {
    const s = await setUp({ reconnectDelaySeconds: 2 });
    try {
      const { secret, session } = await s.listen();
      const made: string[] = [];
      // About 9 s of traffic spans at least two re-dials (one every ~3 s, each away for ~1 s).
      for (let i = 0; i < 18; i++) {
        made.push((await s.stripe.customers.create({ name: `gap-${i}` })).id);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      const [view] = await s.sandbox.control.cliSessions();
      expect(view?.websocket_id).toBe(session);
      expect(view?.connections).toBeGreaterThanOrEqual(3);
      await eventually(async () => s.receiver.received.length, (n) => n >= made.length, 10_000);
      const customers = verifiedEvents(s.stripe, s.receiver, secret).map((e) => (e.data.object as Stripe.Customer).id);
      expect(customers.sort()).toEqual([...made].sort());
    } finally {
      await s.close();
    }
  });

  it.concurrent('an expired session meets "Unknown WebSocket ID.": the CLI opens a new session, keeps its secret, and forwarding resumes', async () => {
    const s = await setUp();
    try {
      const { listener, secret, session } = await s.listen();
      await s.sandbox.control.expireCliSession(session);
      await listener.waitFor(/Session expired, reconnecting/, 20_000);
      const renewed = await eventually(() => s.sandbox.control.cliSessions(), (list) => list.some((v) => v.websocket_id !== session && v.connected), 20_000);
      expect(renewed.some((v) => v.websocket_id === session)).toBe(false);
      await s.stripe.customers.create({ name: 'after expiry' });
      await eventually(async () => s.receiver.received.length, (n) => n === 1, 10_000);
      expect(verifiedEvents(s.stripe, s.receiver, secret).map((e) => e.type)).toEqual(['customer.created']);
    } finally {
      await s.close();
    }
  }, 45_000);

  it.concurrent('refuses an unknown websocket id with 400 {"error":{"message":"Unknown WebSocket ID."}}', async () => {
    const s = await setUp();
    try {
      const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(`${s.sandbox.url}/subscribe/acct_1SandboxInterlock`, {
          headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Websocket-Id': 'cliws_unknown' },
        });
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        });
        req.on('upgrade', () => reject(new Error('the sandbox upgraded an unknown websocket id')));
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(400);
      expect(JSON.parse(body)).toEqual({ error: { message: 'Unknown WebSocket ID.' } });
    } finally {
      await s.close();
    }
  });

  // A process of its own that loads the whole CLI: on two cores busy with the rest of the suite it can take many
  // seconds to print its first lines (15 s once in CI), so its readiness is waited for longer than one event's.
  it.concurrent('`interlock sandbox` prints the exact stripe listen and stripe trigger command lines for itself, and both work as printed', { timeout: 120_000 }, async () => {
    const receiver = await startReceiver();
    const config = tempConfigDir();
    const root = new URL('../../', import.meta.url).pathname;
    const child = spawn(process.execPath, ['bin/interlock.js', 'sandbox', '--port', '0', '--delays', 'fast', '--listen-forward-to', receiver.url], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const lines: string[] = [];
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    let listener: Listener | null = null;
    try {
      if (child.stdout === null) throw new Error('no stdout');
      createInterface({ input: child.stdout }).on('line', (line) => lines.push(line));
      const printed = async (prefix: string): Promise<string[]> => {
        const line = await eventually(async () => lines.find((l) => l.startsWith(prefix)), (found) => found !== undefined, 60_000);
        return (line ?? '').slice(prefix.length).split(' ');
      };
      const listen = await printed('Forward its events with the official Stripe CLI: ');
      expect(listen.slice(0, 3)).toEqual(['npx', 'stripe', 'listen']);
      const env = cliEnvironment(config.path);
      delete env['STRIPE_API_KEY'];
      listener = startListen(listen.slice(3), env);
      const secret = /(whsec_\w+)/.exec(await listener.waitFor(/Ready!/))?.[1] ?? '';
      const trigger = await printed('Fire a test event: ');
      expect(trigger.slice(0, 4)).toEqual(['npx', 'stripe', 'trigger', 'payment_intent.succeeded']);
      const run = await new Promise<number | null>((resolve) => spawn(stripeBinary(), trigger.slice(2), { env, stdio: 'ignore' }).once('exit', resolve));
      expect(run).toBe(0);
      await eventually(async () => receiver.received.map((r) => r.event.type), (types) => types.includes('payment_intent.succeeded'), 10_000);
      const base = new URL(trigger[trigger.indexOf('--api-base') + 1] ?? '');
      const stripe = new Stripe('sk_test_sandbox', { host: base.hostname, port: base.port, protocol: 'http' });
      for (const r of receiver.received) expect(() => stripe.webhooks.constructEvent(r.body, String(r.headers['stripe-signature']), secret)).not.toThrow();
    } finally {
      await listener?.stop();
      child.kill('SIGTERM');
      await exited;
      await receiver.close();
      config.remove();
    }
  });
});
