// Rule: Stripe promises no order between events (stripe-facts §6.4) and the CLI forwards concurrently (§6.5): an
// endpoint still answering one event gets the next one meanwhile (up to `webhookConcurrency`, 4, at once). A
// concurrency of 1 (`POST /_sandbox/config webhook_concurrency=1`) keeps strict FIFO per endpoint for a test that
// wants it, and held deliveries released in a chosen order still arrive in that order.
import { createServer } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness } from './helpers.js';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Harness } from './helpers.js';

let h: Harness;
let server: Server;
let url = '';
/** What the endpoint saw, in order: `arrived <type>` and `answered <type>`. */
let log: string[] = [];
/** Called with each arriving event's type; the endpoint answers 200 when the returned promise settles. */
let handle: (type: string) => Promise<void> = async () => undefined;

beforeAll(async () => {
  h = await startHarness();
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { type } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string };
      log.push(`arrived ${type}`);
      void handle(type).then(() => {
        log.push(`answered ${type}`);
        res.writeHead(200).end();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
});
afterEach(async () => {
  handle = async () => undefined;
  await h.sandbox.control.idle();
  await h.sandbox.control.reset();
  log = [];
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await h.sandbox.close();
});

/** Resolves once `type` has arrived at the endpoint, or after `ms` (the endpoint then answers anyway). */
function arrivalOf(type: string, ms: number): Promise<void> {
  return eventually(async () => log.includes(`arrived ${type}`), (seen) => seen, ms).then(
    () => undefined,
    () => undefined,
  );
}

describe('webhook delivery concurrency', () => {
  it('delivers a later event while the endpoint is still answering an earlier one', async () => {
    await h.stripe.webhookEndpoints.create({ url, enabled_events: ['customer.created', 'customer.updated'] });
    // The endpoint answers customer.created only once customer.updated has reached it (or gives up after 5 s).
    handle = (type) => (type === 'customer.created' ? arrivalOf('customer.updated', 5_000) : Promise.resolve());
    const customer = await h.stripe.customers.create({ name: 'first' });
    await eventually(async () => log.includes('arrived customer.created'), (seen) => seen);
    await h.stripe.customers.update(customer.id, { name: 'second' });
    await eventually(async () => log.length, (n) => n === 4, 10_000);
    expect(log.indexOf('arrived customer.updated')).toBeLessThan(log.indexOf('answered customer.created'));
  });

  it('with webhook_concurrency 1, delivers to an endpoint strictly in order, one at a time', async () => {
    await h.sandbox.control.configure({ webhook_concurrency: 1 });
    await h.stripe.webhookEndpoints.create({ url, enabled_events: ['customer.created', 'customer.updated'] });
    handle = (type) => (type === 'customer.created' ? arrivalOf('customer.updated', 300) : Promise.resolve());
    const customer = await h.stripe.customers.create({ name: 'first' });
    await eventually(async () => log.includes('arrived customer.created'), (seen) => seen);
    await h.stripe.customers.update(customer.id, { name: 'second' });
    await eventually(async () => log.length, (n) => n === 4, 10_000);
    expect(log).toEqual(['arrived customer.created', 'answered customer.created', 'arrived customer.updated', 'answered customer.updated']);
  });

  it('sends held deliveries released in reverse one at a time, in that order, even with room for more', async () => {
    await h.stripe.webhookEndpoints.create({ url, enabled_events: ['customer.created', 'customer.updated', 'customer.deleted'] });
    await h.sandbox.control.addRule({ action: 'hold', count: 3 });
    const customer = await h.stripe.customers.create({ name: 'held' });
    await h.stripe.customers.update(customer.id, { name: 'still held' });
    await h.stripe.customers.del(customer.id);
    // The first released one is slow to answer: the next still waits for it.
    handle = (type) => (type === 'customer.deleted' ? arrivalOf('customer.updated', 300) : Promise.resolve());
    await h.sandbox.control.release('reverse');
    await eventually(async () => log.length, (n) => n === 6, 10_000);
    expect(log).toEqual([
      'arrived customer.deleted',
      'answered customer.deleted',
      'arrived customer.updated',
      'answered customer.updated',
      'arrived customer.created',
      'answered customer.created',
    ]);
  });
});
