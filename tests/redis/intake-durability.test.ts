// A process that takes Stripe's events or support requests answers that they are stored (the webhook route's 200,
// the API's 202 and 201): it refuses to start on a Redis that can lose what it acknowledges, and, once running, it
// refuses them again whenever Redis stops keeping them (CONFIG SET appendonly no, a failover onto a server configured
// otherwise), within about one INTERLOCK_DURABILITY_CHECK_MS: the route answers 503, so Stripe delivers the event
// again later, and the API answers 503 redis_not_durable with nothing recorded. Reads go on; both take writes again
// once a check finds Redis durable. Revoking an approval (the brake) is never refused.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import Stripe from 'stripe';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { startService } from '../../src/main.js';
import { requireDurableIntake } from '../../src/interlock.js';
import { approvalBody, bearer, refundBody, startRig, TOKENS } from '../http/rig.js';
import { testConfig } from '../support/harness.js';
import { freePort, startPrivateRedis } from '../support/private-redis.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

const DURABLE = ['--appendonly', 'yes', '--appendfsync', 'always', '--save', ''];

async function durableRedis(): Promise<{ url: string; admin: Redis }> {
  const redis = await startPrivateRedis(DURABLE);
  closers.push(() => redis.stop());
  const admin = new Redis(redis.url);
  closers.push(() => admin.quit());
  return { url: redis.url, admin };
}

describe('intake while Redis stops being durable', () => {
  it('the webhook route answers 503 (Stripe delivers again) while Redis is not durable, and 200 once it is again', async () => {
    const { url, admin } = await durableRedis();
    const secret = `whsec_${randomBytes(8).toString('hex')}`;
    const config = testConfig({ redisUrl: url, unsafeDurability: false, stripeWebhookSecrets: [secret], host: '127.0.0.1', port: await freePort(), durabilityCheckMs: 200, dataDir: mkdtempSync(join(tmpdir(), 'intake-durability-')) });
    const service = await startService(config, ['webhooks']);
    closers.push(() => service.close());
    const post = async () => {
      const payload = JSON.stringify({ id: `evt_${randomBytes(8).toString('hex')}`, object: 'event', type: 'refund.updated', created: Math.floor(Date.now() / 1000), data: { object: { id: 're_x', object: 'refund', status: 'succeeded', metadata: {} } } });
      const header = Stripe.webhooks.generateTestHeaderString({ payload, secret });
      const answer = await fetch(`${service.url ?? ''}/webhooks/stripe`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': header }, body: payload });
      return answer.status;
    };
    expect(await post()).toBe(200);
    await admin.config('SET', 'appendonly', 'no');
    await expect.poll(post, { timeout: 5_000, interval: 100 }).toBe(503);
    await admin.config('SET', 'appendonly', 'yes');
    await expect.poll(post, { timeout: 5_000, interval: 100 }).toBe(200);
  });

  it('the API refuses what it would record (503 redis_not_durable, nothing written) and still answers reads', async () => {
    const { url, admin } = await durableRedis();
    // The API's stores are made with the app, so the guard reaches the monitor made on them.
    let monitor: Awaited<ReturnType<typeof requireDurableIntake>> | null = null;
    const api = await startRig({ config: { redisUrl: url, unsafeDurability: false, durabilityCheckMs: 60_000 }, deps: { intake: { assertDurable: () => monitor?.assertDurable() } } });
    closers.push(() => api.close());
    const started = await requireDurableIntake(api.stores);
    monitor = started;
    closers.push(() => started.stop());
    const approval = approvalBody();
    expect((await request(api.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);

    await admin.config('SET', 'appendonly', 'no');
    await started.check();
    const refused = await request(api.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ approval: approval.id }));
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('redis_not_durable');
    expect(refused.body.error.message).toContain('appendonly');
    expect((await request(api.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approvalBody())).status).toBe(503);
    expect(await api.effectCount()).toBe(0);
    expect((await request(api.app).get('/v1/effects').set(bearer(TOKENS.support))).status).toBe(200);
    // The brake still works: revoking takes authority away, so it is never refused for durability.
    const brake = approvalBody();
    await admin.config('SET', 'appendonly', 'yes');
    await started.check();
    expect((await request(api.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(brake)).status).toBe(201);
    await admin.config('SET', 'appendonly', 'no');
    await started.check();
    expect((await request(api.app).post(`/v1/approvals/${String(brake.id)}/revoke`).set(bearer(TOKENS.approver)).send({})).status).toBe(200);

    await admin.config('SET', 'appendonly', 'yes');
    await started.check();
    expect((await request(api.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ approval: approval.id }))).status).toBe(202);
  });
});
