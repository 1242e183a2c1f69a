// Shared test harness: a fast-delay sandbox, the official SDK pointed at it, a webhook receiver, and polling.
import { createServer } from 'node:http';
import Stripe from 'stripe';
import { startSandbox } from '../index.js';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Sandbox, SandboxOptions } from '../index.js';

export interface Harness {
  sandbox: Sandbox;
  stripe: Stripe;
}

export function stripeFor(sandbox: Sandbox, config: Stripe.StripeConfig = {}, key = 'sk_test_interlock'): Stripe {
  return new Stripe(key, { host: sandbox.host, port: sandbox.port, protocol: 'http', ...config });
}

export async function startHarness(options: SandboxOptions = {}): Promise<Harness> {
  const sandbox = await startSandbox({ port: 0, delays: 'fast', ...options });
  return { sandbox, stripe: stripeFor(sandbox) };
}

/** Polls `read` until `accept` holds, failing after `timeoutMs`. */
export async function eventually<T>(read: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 3_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await sleep(10);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A confirmed $100 payment (or `amount`) with a test payment method. */
export async function pay(stripe: Stripe, paymentMethod: string, extra: Partial<Stripe.PaymentIntentCreateParams> = {}): Promise<{ intent: Stripe.PaymentIntent; charge: string }> {
  const intent = await stripe.paymentIntents.create({ amount: 10_000, currency: 'usd', payment_method: paymentMethod, confirm: true, ...extra });
  if (typeof intent.latest_charge !== 'string') throw new Error('confirmed intent has no charge');
  return { intent, charge: intent.latest_charge };
}

export async function disputesOf(stripe: Stripe, paymentIntent: string): Promise<Stripe.Dispute[]> {
  return (await stripe.disputes.list({ payment_intent: paymentIntent })).data;
}

export async function firstDispute(stripe: Stripe, paymentIntent: string): Promise<Stripe.Dispute> {
  const [dispute] = await eventually(() => disputesOf(stripe, paymentIntent), (list) => list.length > 0);
  if (dispute === undefined) throw new Error('no dispute');
  return dispute;
}

export async function raw(sandbox: Sandbox, method: string, path: string, init: { body?: string; headers?: Record<string, string> } = {}): Promise<{ status: number; headers: Headers; json: Record<string, unknown> }> {
  const response = await fetch(`${sandbox.url}${path}`, {
    method,
    headers: { Authorization: 'Bearer sk_test_raw', 'Content-Type': 'application/x-www-form-urlencoded', ...init.headers },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  return { status: response.status, headers: response.headers, json: (await response.json()) as Record<string, unknown> };
}

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  event: { id: string; type: string };
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Decides the status for the nth request (0-based) and optionally how long to wait before answering. */
  respond: (index: number) => { status: number; delayMs?: number };
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const receiver: Receiver = { url: '', received: [], respond: () => ({ status: 200 }), close: async () => undefined };
  let count = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const { status, delayMs = 0 } = receiver.respond(count++);
      setTimeout(() => {
        if (status >= 200 && status < 300) receiver.received.push({ headers: req.headers, body, event: JSON.parse(body) as Received['event'] });
        res.writeHead(status).end();
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return receiver;
}

export async function expectStripeError(call: Promise<unknown>): Promise<Stripe.errors.StripeError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof Stripe.errors.StripeError) return error;
    throw error;
  }
  throw new Error('expected a Stripe error');
}
