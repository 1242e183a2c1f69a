// `interlock serve` with the webhooks role (issue 10 §5): against Stripe, STRIPE_WEBHOOK_SECRET is required (exit 2,
// naming the setting and the `stripe listen` line to run); against a sandbox on this machine it registers its own
// endpoint there (and deletes it when it stops), logs the webhook URL and the `stripe listen --api-base` line, and
// the sandbox's events reach it signed with that endpoint's secret.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { freePort } from '../../src/redis/private-server.js';
import { runCli, tempDir } from '../cli/run-cli.js';
import { signWebhookBody } from '../../src/interlock.js';
import { REDIS_URL, removePrefixes } from '../support/harness.js';
import { spawnServe, pay } from './facts-rig.js';

let sandbox: Sandbox;
let stripe: Stripe;
let dir: { dir: string; remove(): void };
// Every prefix a serve of this file ran under, removed from the shared Redis at the end.
const prefixes: string[] = [];
const prefix = () => {
  prefixes.push(`ts${randomBytes(5).toString('hex')}`);
  return prefixes.at(-1) ?? '';
};
const base = () => ({ REDIS_URL, INTERLOCK_KEY_PREFIX: prefix(), INTERLOCK_UNSAFE_DURABILITY: '1', INTERLOCK_DATA_DIR: join(dir.dir, 'data'), STRIPE_WEBHOOK_SECRET: '' });

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, delays: 'fast' });
  stripe = new Stripe('sk_test_setup', { host: sandbox.host, port: sandbox.port, protocol: 'http', maxNetworkRetries: 0 });
  dir = tempDir('serve-webhooks');
});

afterAll(async () => {
  await sandbox?.close();
  dir?.remove();
  await removePrefixes(prefixes);
});

describe('serve --roles webhooks', () => {
  it('against Stripe without STRIPE_WEBHOOK_SECRET: exit 2, naming the setting and the stripe listen line to run', async () => {
    const port = await freePort();
    const run = await runCli(['serve', '--roles', 'webhooks'], { ...base(), STRIPE_SECRET_KEY: 'sk_test_interlockServe0001', INTERLOCK_PORT: String(port) });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('The webhooks role needs STRIPE_WEBHOOK_SECRET against Stripe.');
    expect(run.stderr).toContain(`Run \`npx stripe listen --forward-to http://127.0.0.1:${port}/webhooks/stripe --events refund.created,`);
    expect(run.stderr).toContain('credit_note.voided');
  });

  it.each([['webhooks'], ['api'], ['api,webhooks']])('--roles %s on a Redis that can lose what it acknowledges (the shared one: no AOF) will not start, saying why: it would answer events and requests as stored', async (roles) => {
    const port = await freePort();
    const { INTERLOCK_UNSAFE_DURABILITY: _optOut, ...env } = base();
    const run = await runCli(['serve', '--roles', roles], { ...env, STRIPE_SECRET_KEY: 'sk_test_interlockServe0003', STRIPE_WEBHOOK_SECRET: 'whsec_durability', INTERLOCK_PORT: String(port) });
    expect(run.code, run.stderr).not.toBe(0);
    expect(run.stderr).toContain('so this process will not take webhooks or support requests');
    expect(run.stderr).toContain('INTERLOCK_UNSAFE_DURABILITY=1');
    expect(run.stdout).not.toContain(`:${port}`);
  });

  it('against a sandbox: registers its endpoint, logs the URL and the stripe listen line, takes the sandbox\'s events, and unregisters on SIGTERM', async () => {
    const served = await spawnServe(['--roles', 'webhooks', '--port', '0'], { ...base(), STRIPE_SECRET_KEY: 'sk_test_interlockServe0002', STRIPE_API_BASE: sandbox.url }, 'webhook route ready');
    try {
      const ready = JSON.parse(served.lines.find((line) => line.includes('webhook route ready')) ?? '{}') as { webhookUrl?: string; listen?: string; delivered?: string };
      expect(ready.webhookUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/webhooks\/stripe$/);
      expect(ready.listen).toBe(`npx stripe listen --api-base http://127.0.0.1:${sandbox.port} --api-key "$STRIPE_SECRET_KEY" --skip-update --forward-to ${ready.webhookUrl} --events ${ready.listen?.split('--events ')[1] ?? ''}`);
      expect(ready.listen).toContain('refund.failed');
      const endpoints = (await stripe.webhookEndpoints.list()).data;
      expect(endpoints.map((endpoint) => endpoint.url)).toEqual([ready.webhookUrl]);
      expect(ready.delivered).toBe(`registered at the sandbox as ${endpoints[0]?.id}`);

      const { paymentIntent } = await pay(stripe, 'pm_card_visa', 5_000);
      await stripe.refunds.create({ payment_intent: paymentIntent, amount: 1_000 });
      await sandbox.control.idle();
      const deliveries = await sandbox.control.deliveries({ endpoint: endpoints[0]?.id ?? '', type: 'refund.created' });
      expect(deliveries.map((delivery) => delivery.attempts.map((attempt) => attempt.status))).toEqual([[200]]);
    } finally {
      served.child.kill('SIGTERM');
    }
    expect(await served.exited).toBe(0);
    expect((await stripe.webhookEndpoints.list()).data).toEqual([]);
  });

  // Rule (stripe/webhooks.ts mode, wired by serve from its key): an event of the other mode than the service's key
  // concerns no money it moves; it is refused (400 livemode_mismatch) so the misrouted endpoint shows failing, where a
  // 200 hid it for good. The service's own mode is taken.
  it('answers a live-mode event 400 livemode_mismatch on a test-key service, and takes a test-mode one', async () => {
    const secret = 'whsec_serveModeCheck';
    const served = await spawnServe(['--roles', 'webhooks', '--port', '0'], { ...base(), STRIPE_SECRET_KEY: 'sk_test_interlockServe0004', STRIPE_API_BASE: sandbox.url, STRIPE_WEBHOOK_SECRET: secret }, 'webhook route ready');
    try {
      const ready = JSON.parse(served.lines.find((line) => line.includes('webhook route ready')) ?? '{}') as { webhookUrl?: string };
      const post = async (livemode: boolean) => {
        const body = JSON.stringify({ id: `evt_mode_${livemode ? 'live' : 'test'}_${randomBytes(4).toString('hex')}`, object: 'event', type: 'refund.failed', livemode, created: Math.floor(Date.now() / 1000), data: { object: { id: 're_mode', object: 'refund' } } });
        const answer = await fetch(ready.webhookUrl ?? '', { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signWebhookBody(body, secret) }, body });
        return { status: answer.status, body: (await answer.json()) as { error?: { code?: string } } };
      };
      const live = await post(true);
      expect({ status: live.status, reason: JSON.stringify(live.body) }).toEqual({ status: 400, reason: expect.stringContaining('livemode_mismatch') });
      expect((await post(false)).status).toBe(200);
    } finally {
      served.child.kill('SIGTERM');
    }
    expect(await served.exited).toBe(0);
  });

  // Rule: a process with the webhooks role and no api role answers every path but its route and /healthz with the
  // service's JSON 404, never Express's HTML page: a Stripe-signed request to a wrong path (`stripe listen --forward-to`
  // …/webhook) is told the route and the --forward-to line, any other request that this process serves no support API.
  it('answers a wrong path with the service\'s 404 naming the webhook route, signed or not', async () => {
    const secret = 'whsec_serveWrongPath';
    const served = await spawnServe(['--roles', 'webhooks', '--port', '0'], { ...base(), STRIPE_SECRET_KEY: 'sk_test_interlockServe0005', STRIPE_API_BASE: sandbox.url, STRIPE_WEBHOOK_SECRET: secret }, 'webhook route ready');
    try {
      const ready = JSON.parse(served.lines.find((line) => line.includes('webhook route ready')) ?? '{}') as { webhookUrl?: string };
      const origin = new URL(ready.webhookUrl ?? '').origin;
      const body = JSON.stringify({ id: `evt_path_${randomBytes(4).toString('hex')}`, object: 'event', type: 'refund.failed', livemode: false, created: Math.floor(Date.now() / 1000), data: { object: { id: 're_path', object: 'refund' } } });
      const signed = await fetch(`${origin}/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signWebhookBody(body, secret) }, body });
      const signedBody = (await signed.json()) as { error?: { code?: string; message?: string } };
      expect(signed.status).toBe(404);
      expect(signedBody.error?.code).toBe('not_found');
      expect(signedBody.error?.message).toContain(`--forward-to ${origin}/webhooks/stripe`);
      const plain = await fetch(`${origin}/v1/refunds`);
      const plainBody = (await plain.json()) as { error?: { code?: string; message?: string } };
      expect({ status: plain.status, code: plainBody.error?.code }).toEqual({ status: 404, code: 'not_found' });
      expect(plainBody.error?.message).toContain('takes Stripe\'s events only, at POST /webhooks/stripe');
      expect((await fetch(`${origin}/healthz`)).status).toBe(200);
    } finally {
      served.child.kill('SIGTERM');
    }
    expect(await served.exited).toBe(0);
  });
});
