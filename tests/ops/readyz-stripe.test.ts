// /readyz and Stripe, through the composition root (startService with the api role): Stripe not answering is
// reported in the checks (status `degraded`, 200), since every process of a deployment meets an outage alike and
// taking them all out of rotation would add to it what works without Stripe (revoking an approval, the inbox,
// receipts, the webhooks); a key Stripe refuses is this process's own misconfiguration and makes it unready (503). The
// check asks Stripe at most once per window, however often /readyz is probed.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/main.js';
import { stripeCheck } from '../../webhooks/app.js';
import { freePort } from '../support/private-redis.js';
import { REDIS_URL, testConfig } from '../support/harness.js';
import { startStripeWorld, TEST_KEY, type StripeWorld } from '../stripe/stripe-support.js';

const dir = mkdtempSync(join(tmpdir(), 'readyz-stripe-'));
const prefix = `trz${randomBytes(5).toString('hex')}`;
const services: Service[] = [];
let world: StripeWorld;

type Readiness = { status: string; checks: { name: string; ok: boolean; detail: string | null; advisory?: boolean }[] };

async function serve(stripeApiBase: string): Promise<string> {
  const service = await startService(testConfig({ keyPrefix: prefix, host: '127.0.0.1', port: 0, dataDir: dir, stripeSecretKey: TEST_KEY, stripeApiBase, apiTokens: 'sam:support:itk_support_readyz0123456789ab' }), ['api']);
  services.push(service);
  return service.url ?? '';
}

async function readyz(url: string): Promise<{ status: number; body: Readiness }> {
  const answer = await fetch(`${url}/readyz`);
  return { status: answer.status, body: (await answer.json()) as Readiness };
}

beforeAll(async () => {
  world = await startStripeWorld();
});

afterAll(async () => {
  for (const service of services) await service.close();
  await world.close();
  const redis = new Redis(REDIS_URL);
  for (const pattern of [`${prefix}:*`, `{${prefix}-queues}:*`]) {
    const stale = await redis.keys(pattern);
    if (stale.length > 0) await redis.del(...stale);
  }
  await redis.quit();
  rmSync(dir, { recursive: true, force: true });
});

describe('/readyz and Stripe', () => {
  it('a Stripe that does not answer leaves the process in rotation, degraded (200), with a stripe check naming where it went', async () => {
    const dead = await freePort();
    const url = await serve(`http://127.0.0.1:${dead}`);
    const { status, body } = await readyz(url);
    expect(status).toBe(200);
    expect(body.status).toBe('degraded');
    expect(body.checks.map((check) => [check.name, check.ok])).toEqual([
      ['redis', true],
      ['redis_writable', true],
      ['redis_durable', true],
      ['queues', true],
      ['stripe', false],
    ]);
    const stripe = body.checks.find((check) => check.name === 'stripe');
    expect(stripe).toMatchObject({ advisory: true });
    expect(stripe?.detail).toContain(`127.0.0.1:${dead}`);
    expect(stripe?.detail).toContain('premise_read_failed');
  });

  it('a key Stripe refuses makes the process unready (503, Retry-After), naming the key problem: a rollout with a wrong key stops there', async () => {
    const url = await serve(world.sandbox.url);
    await world.sandbox.control.failNext({ path: '/v1/refunds', method: 'GET', status: 401, message: 'Invalid API Key provided: sk_test_****0001' });
    const answer = await fetch(`${url}/readyz`);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('5');
    const body = (await answer.json()) as Readiness;
    expect(body.status).toBe('unready');
    const stripe = body.checks.find((check) => check.name === 'stripe');
    expect(stripe?.ok).toBe(false);
    expect(stripe?.advisory).toBeUndefined();
    expect(stripe?.detail).toContain('Stripe refused the API key');
  });

  it('asks Stripe once however often /readyz is probed at once or in a row, and answers ready when it answers', async () => {
    const url = await serve(world.sandbox.url);
    await world.sandbox.control.clearRequests();
    const answers = await Promise.all(Array.from({ length: 5 }, () => readyz(url)));
    for (let i = 0; i < 5; i += 1) answers.push(await readyz(url));
    expect(answers.map((answer) => [answer.status, answer.body.status])).toEqual(Array.from({ length: 10 }, () => [200, 'ready']));
    const reads = (await world.sandbox.control.requests()).filter((logged) => logged.method === 'GET' && logged.path === '/v1/refunds');
    expect(reads).toHaveLength(1);
  });

  it('asks again once its answer is older than the window, so a Stripe that came back reads as ready again', async () => {
    const outcomes: (Error | null)[] = [new Error('down'), null];
    let asked = 0;
    const check = stripeCheck(
      async () => {
        const outcome = outcomes[asked] ?? null;
        asked += 1;
        if (outcome !== null) throw outcome;
      },
      { freshMs: 30 },
    );
    const first = await check.check();
    expect(first).toMatchObject({ ok: false });
    expect(await check.check()).toBe(first);
    expect(asked).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(await check.check()).toEqual({ ok: true });
    expect(asked).toBe(2);
  });
});
