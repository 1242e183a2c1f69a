// Rule: a `serve` that was killed leaves no webhook endpoint at the sandbox that the next start answers 400. With
// STRIPE_API_BASE at a sandbox on this machine and no STRIPE_WEBHOOK_SECRET, `serve` registers its route as an
// endpoint there and deletes it when it stops; a SIGKILL skips the stop, and the endpoint stays, with a secret no
// process holds. The next start on the same URL deletes it before it registers its own, so one endpoint per URL
// remains, and the sandbox's events are answered 200 there, not 400 bad_signature retried for days.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Stripe from 'stripe';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { freePort } from '../../src/redis/private-server.js';
import { tempDir } from '../cli/run-cli.js';
import { pay, spawnServe, type Served } from '../facts/facts-rig.js';
import { REDIS_URL, removePrefixes } from '../support/harness.js';

let sandbox: Sandbox;
let stripe: Stripe;
let dir: { dir: string; remove(): void };
const prefix = `tks${randomBytes(5).toString('hex')}`;
const running: Served[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, delays: 'fast' });
  stripe = new Stripe('sk_test_setup', { host: sandbox.host, port: sandbox.port, protocol: 'http', maxNetworkRetries: 0 });
  dir = tempDir('killed-serve-endpoint');
});

afterAll(async () => {
  for (const served of running) if (served.child.exitCode === null && served.child.signalCode === null) served.child.kill('SIGKILL');
  await sandbox?.close();
  dir?.remove();
  await removePrefixes([prefix]);
});

it('SIGKILL, then a start on the same URL: the killed start\'s endpoint is deleted, the new one takes the sandbox\'s events, and its stop deletes it', async () => {
  const port = await freePort();
  const env = { REDIS_URL, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_UNSAFE_DURABILITY: '1', INTERLOCK_DATA_DIR: join(dir.dir, 'data'), STRIPE_WEBHOOK_SECRET: '', STRIPE_SECRET_KEY: 'sk_test_killedServe0001', STRIPE_API_BASE: sandbox.url };
  const url = `http://127.0.0.1:${port}/webhooks/stripe`;
  // An endpoint for another URL (another service on this sandbox) is none of this start's business.
  const other = await stripe.webhookEndpoints.create({ url: 'http://127.0.0.1:9/webhooks/stripe', enabled_events: ['customer.created'] });

  const killed = await spawnServe(['--roles', 'webhooks', '--port', String(port)], env, 'webhook route ready');
  running.push(killed);
  const [first] = (await stripe.webhookEndpoints.list()).data.filter((endpoint) => endpoint.url === url);
  killed.child.kill('SIGKILL');
  await killed.exited;
  expect((await stripe.webhookEndpoints.list()).data.map((endpoint) => endpoint.id)).toContain(first?.id);

  const served = await spawnServe(['--roles', 'webhooks', '--port', String(port)], env, 'webhook route ready');
  running.push(served);
  try {
    const endpoints = (await stripe.webhookEndpoints.list()).data;
    const ours = endpoints.filter((endpoint) => endpoint.url === url);
    expect(ours).toHaveLength(1);
    expect(ours[0]?.id).not.toBe(first?.id);
    expect(endpoints.map((endpoint) => endpoint.id)).toContain(other.id);
    expect(served.lines.join('\n')).toContain(`"removed":["${first?.id ?? ''}"]`);

    const { paymentIntent } = await pay(stripe, 'pm_card_visa', 5_000);
    await stripe.refunds.create({ payment_intent: paymentIntent, amount: 1_000 });
    await sandbox.control.idle();
    const deliveries = await sandbox.control.deliveries({ type: 'refund.created' });
    expect(deliveries.map((delivery) => ({ endpoint: delivery.endpoint, statuses: delivery.attempts.map((attempt) => attempt.status) }))).toEqual([{ endpoint: ours[0]?.id, statuses: [200] }]);
  } finally {
    served.child.kill('SIGTERM');
  }
  expect(await served.exited).toBe(0);
  expect((await stripe.webhookEndpoints.list()).data.map((endpoint) => endpoint.id)).toEqual([other.id]);
}, 120_000);
