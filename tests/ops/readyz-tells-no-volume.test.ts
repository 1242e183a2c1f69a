// Rule: GET /readyz answers anyone, without a token, so it says whether each check passed and why one failed, never
// how much work the service holds (how many effects or Stripe events wait on a queue) nor anything else about a check
// that passed (Redis's persistence settings when durability is opted out, a worker's id): a passing check carries
// `detail: null`, and the queue depth stays in the token-guarded interlock_queue_jobs metric.
import request from 'supertest';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createApp, queueCheck, storeChecks, workerChecks } from '../../webhooks/app.js';
import { readiness } from '../../webhooks/api/ops-routes.js';
import { approvalBody, bearer, refundBody, rigSuite, tokenRegistry, TOKENS } from '../http/rig.js';

// No worker: the proposals stay waiting on the effects queue. The rig's stores opt out of durability, so on a Redis
// that is not durable the redis_durable check passes with the settings as its detail.
const rig = rigSuite({ config: { keyPrefix: `readyz-volume-${randomBytes(4).toString('hex')}` } });

describe('/readyz without a token', () => {
  it('does not tell how many effects wait to be sent, nor any detail of a check that passed', async () => {
    const app = createApp({ stores: rig.stores, effects: rig.queue, decisions: rig.decisions, readFacts: async () => ({ chargebacks: [], refunded_by_others: 0 }), tokens: tokenRegistry(), logger: rig.stores.logger, readiness: [...storeChecks(rig.stores), queueCheck(rig.queue)] });
    rig.target.world.set('payment:pi_readyz_volume', { chargebacks: [], refunded_by_others: 0 });
    const approval = approvalBody({ scope: 'payment:pi_readyz_volume', cap_cents: 9_000, max_uses: 5 });
    expect((await request(app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    for (let i = 0; i < 3; i++) {
      const proposed = await request(app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: 'pi_readyz_volume', approval: approval.id, amount: 1_000 }));
      expect(proposed.status).toBe(202);
    }
    expect(await rig.queue.queue.count()).toBeGreaterThanOrEqual(3);

    const ready = await request(app).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({
      status: 'ready',
      checks: [
        { name: 'redis', ok: true, detail: null },
        { name: 'redis_writable', ok: true, detail: null },
        { name: 'redis_durable', ok: true, detail: null },
        { name: 'queues', ok: true, detail: null },
      ],
    });
  });

  it('still says why a check failed: a queue that does not answer, a lapsed heartbeat', async () => {
    const broken = { queue: { count: async (): Promise<number> => Promise.reject(new Error('Connection is closed.')) } };
    const heartbeat = { workerId: 'w-volume', ttlMs: 4_000, aliveFor: () => 0, supersededBy: () => null };
    const answer = await readiness([queueCheck(broken, 'facts_queue', 'event'), ...workerChecks({ heartbeat, workers: [] })]);
    expect(answer.status).toBe(503);
    expect(answer.body.checks).toEqual([
      { name: 'facts_queue', ok: false, detail: "the event queue does not answer through this process's connection (Connection is closed.), so nothing is put on it" },
      { name: 'heartbeat', ok: false, detail: expect.stringMatching(/worker w-volume has not renewed its heartbeat within 4000 ms/) },
    ]);
  });

  it('reports a passing check as ok alone, whatever detail the check gave', async () => {
    const answer = await readiness([{ name: 'redis_durable', check: async () => ({ ok: true, detail: 'not durable, opted out: append-only file is off; appendfsync is everysec' }) }]);
    expect(answer).toEqual({ status: 200, body: { status: 'ready', checks: [{ name: 'redis_durable', ok: true, detail: null }] } });
  });
});
