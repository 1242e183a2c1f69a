// Rule: through the support API, a retry of one request that re-decides it (its decision text regenerated each time)
// while its effect is unsettled is recorded at most MAX_PROPOSALS times; the next is `409 too_many_proposals`, saying
// which effect, how many decisions it holds, to watch GET /v1/effects/<id> and that a new request id is a new effect,
// and nothing is written. The same request as the latest recorded is still `200`.
import request from 'supertest';
import { beforeAll, expect, it } from 'vitest';
import { MAX_PROPOSALS } from '../../src/gate/record.js';
import { approvalBody, bearer, refundBody, rigSuite, TOKENS } from '../http/rig.js';

// No effects worker: the effect stays unsettled (as while the workers are down or Stripe is slow).
const rig = rigSuite({ deps: { limits: { ratePerMinute: null } } });
beforeAll(() => {
  rig.target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
});

it('answers 409 too_many_proposals to the re-decision past MAX_PROPOSALS, and writes nothing', async () => {
  const approval = approvalBody({ max_uses: 5, cap_cents: 100_000 });
  expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
  const body = refundBody({ approval: approval.id });
  const attempt = (n: number) => request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send({ ...body, decision: { model: 'gpt-x', text: `Refund approved (attempt ${n}).` } });
  let effectId = '';
  for (let n = 0; n < MAX_PROPOSALS; n += 1) {
    const answer = await attempt(n);
    expect(answer.status).toBe(202);
    effectId = String(answer.body.effect_id);
  }
  const journal = async () => (await request(rig.app).get(`/v1/effects/${effectId}`).set(bearer(TOKENS.auditor))).body.journal as { kind: string }[];
  const before = await journal();

  const refused = await attempt(MAX_PROPOSALS);
  expect([refused.status, refused.body.error?.code]).toEqual([409, 'too_many_proposals']);
  expect(refused.body.error.message).toContain(`Effect ${effectId} already holds ${MAX_PROPOSALS} decisions`);
  expect(refused.body.error.message).toContain(`GET /v1/effects/${effectId}`);
  expect(refused.body.error.message).toContain('a new request id starts a new effect');
  expect(await journal()).toEqual(before);
  expect(before.filter((entry) => entry.kind === 'PROPOSED')).toHaveLength(MAX_PROPOSALS);

  // The latest decision sent again is the same request recorded before.
  expect((await attempt(MAX_PROPOSALS - 1)).status).toBe(200);
  // The refusal is one the route's document lists.
  const doc = (await request(rig.app).get('/v1/openapi.json')).body;
  expect(String(doc.paths['/v1/refunds'].post.responses['409'].description)).toContain('too_many_proposals');
});
