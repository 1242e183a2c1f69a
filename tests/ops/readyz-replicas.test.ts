// Rule: with INTERLOCK_REDIS_MIN_REPLICAS=N, a replica stopped for long makes every webhook delivery 503
// (redis_not_durable), and the process's probes say so: /readyz, the api's and the metrics listener's, answers 503 with a
// failed redis_replicas check naming the master, its silent replica and what to do, and 200 again once the replica is
// back; each delivery refused so is counted in interlock_redis_not_durable_total{where="webhook"}. An operator's
// monitoring sees more than a run of 503s in a request log.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService } from '../../src/main.js';
import { startReplicatedPair, type ReplicatedPair } from '../redis/replicated-pair.js';
import { testConfig } from '../support/harness.js';
import { freePort } from '../support/private-redis.js';
import { TEST_KEY } from '../stripe/stripe-support.js';

type Readyz = { status: number; body: { status: string; checks: { name: string; ok: boolean; detail: string | null }[] } };

let pair: ReplicatedPair;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  pair = await startReplicatedPair();
}, 60_000);

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await pair?.stop();
}, 60_000);

/** A sample of the Prometheus text: `name{labels}`'s value, or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((item) => item.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function readyz(url: string): Promise<Readyz> {
  const answer = await fetch(url);
  return { status: answer.status, body: (await answer.json()) as Readyz['body'] };
}

const failed = (answer: Readyz) => answer.body.checks.filter((check) => !check.ok).map((check) => check.name);
const replicasDetail = (answer: Readyz) => answer.body.checks.find((check) => check.name === 'redis_replicas')?.detail ?? null;

describe('the probes of a process under INTERLOCK_REDIS_MIN_REPLICAS=1', () => {
  it('answer 503 naming the silent replica while it is stopped, count each webhook refused for it, and answer 200 once it is back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'readyz-replicas-'));
    closers.push(async () => rmSync(dir, { recursive: true, force: true }));
    const secret = `whsec_${randomBytes(12).toString('hex')}`;
    // A healthy replica is given 2 s to acknowledge (a loaded machine is slow); Stripe does not answer here, an advisory
    // check (the api's 200 `degraded`).
    const config = testConfig({
      redisUrl: pair.primary.url,
      keyPrefix: `rr${randomBytes(5).toString('hex')}`,
      unsafeDurability: false,
      redisMinReplicas: 1,
      redisWaitMs: 2_000,
      durabilityCheckMs: 200,
      stripeWebhookSecrets: [secret],
      host: '127.0.0.1',
      port: 0,
      dataDir: dir,
      stripeSecretKey: TEST_KEY,
      stripeApiBase: `http://127.0.0.1:${await freePort()}`,
      apiTokens: 'sam:support:itk_support_replicas0123456789',
      metricsAddr: { host: '127.0.0.1', port: await freePort() },
    });
    const service = await startService(config, ['api', 'webhooks']);
    closers.push(() => service.close());
    const api = `${service.url ?? ''}/readyz`;
    const listener = (service.metricsUrl ?? '').replace(/\/metrics$/, '/readyz');
    const refusedHere = async () => sample(await (await fetch(service.metricsUrl ?? '')).text(), 'interlock_redis_not_durable_total{where="webhook"}');
    const deliver = async (id: string) => {
      const payload = JSON.stringify({ id, object: 'event', type: 'refund.updated', created: Math.floor(Date.now() / 1000), livemode: false, data: { object: { id: 're_x', object: 'refund', status: 'succeeded', metadata: {} } } });
      const header = Stripe.webhooks.generateTestHeaderString({ payload, secret });
      const answer = await fetch(`${service.url ?? ''}/webhooks/stripe`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': header }, body: payload });
      return { status: answer.status, code: ((await answer.json()) as { error?: { code?: string } }).error?.code ?? null };
    };

    // The replica online and acknowledging: ready, and a delivery is taken.
    await expect.poll(async () => (await readyz(listener)).status, { timeout: 20_000, interval: 100 }).toBe(200);
    expect({ api: failed(await readyz(api)), listener: failed(await readyz(listener)), delivered: await deliver(`evt_${randomBytes(8).toString('hex')}`), refused: await refusedHere() }).toEqual({
      api: ['stripe'],
      listener: [],
      delivered: { status: 200, code: null },
      refused: 0,
    });

    // The replica stops (a stalled host): it takes nothing more and acknowledges nothing.
    const behind = `evt_${randomBytes(8).toString('hex')}`;
    let whileStopped: Record<string, unknown>;
    pair.replica.process.kill('SIGSTOP');
    try {
      const refused = await deliver(behind);
      await expect.poll(async () => (await readyz(listener)).status, { timeout: 20_000, interval: 100 }).toBe(503);
      const [onListener, onApi] = [await readyz(listener), await readyz(api)];
      whileStopped = { refused, count: await refusedHere(), listener: { status: onListener.status, unready: onListener.body.status, failed: failed(onListener) }, api: { status: onApi.status, failed: failed(onApi) }, detail: replicasDetail(onListener) };
    } finally {
      pair.replica.process.kill('SIGCONT');
    }
    expect(whileStopped).toEqual({
      refused: { status: 503, code: 'redis_not_durable' },
      count: 1,
      listener: { status: 503, unready: 'unready', failed: ['redis_replicas'] },
      api: { status: 503, failed: ['redis_replicas', 'stripe'] },
      detail: expect.stringMatching(new RegExp(`^INTERLOCK_REDIS_MIN_REPLICAS requires 1 replica acknowledging every Redis master, but 127\\.0\\.0\\.1:${pair.primary.port} has 0 \\(127\\.0\\.0\\.1:${pair.replica.port} silent for \\d+ s\\) \\(.*\\): until each has, webhooks are answered 503 redis_not_durable, .* Bring the replicas back .*, or lower INTERLOCK_REDIS_MIN_REPLICAS$`)),
    });

    // The replica back: ready again, and Stripe's redelivery is taken; nothing more was refused.
    await expect.poll(async () => (await readyz(listener)).status, { timeout: 20_000, interval: 100 }).toBe(200);
    expect({ api: failed(await readyz(api)), redelivered: await deliver(behind), refused: await refusedHere() }).toEqual({ api: ['stripe'], redelivered: { status: 200, code: null }, refused: 1 });
  }, 90_000);
});
