// A request sent again under a recorded request id with another payload is refused (409 conflicting_payload) and
// nothing is sent; the attempt is kept on the recorded effect's receipt as evidence, but once per distinct proposal
// and at most CONFLICT_EVIDENCE_MAX in all. Each one used to append a signed REFUSED quoting the whole proposal, so a
// caller repeating or varying the request grew a committed effect's receipt without bound (3 KB a request).
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { CONFLICT_EVIDENCE_MAX } from '../../src/interlock.js';
import { approvalBody, bearer, refundBody, rigSuite, TOKENS, uid } from './rig.js';

const rig = rigSuite({ worker: true, deps: { limits: { ratePerMinute: null } } });

describe('409 conflicting_payload', () => {
  it('keeps each distinct conflicting proposal once, at most CONFLICT_EVIDENCE_MAX, and says what it kept', async () => {
    const paymentIntent = `pi_${uid()}`;
    rig.target.world.set(`payment:${paymentIntent}`, { chargebacks: [], refunded_by_others: 0 });
    const approval = approvalBody({ scope: `payment:${paymentIntent}` });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const body = refundBody({ payment_intent: paymentIntent, approval: approval.id });
    const first = await request(rig.app).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send(body);
    expect(first.body.outcome).toBe('COMMITTED');
    const refusals = async () => {
      const detail = await request(rig.app).get(`/v1/effects/${first.body.effect_id}`).set(bearer(TOKENS.support));
      return (detail.body.journal as { kind: string }[]).filter((entry) => entry.kind === 'REFUSED').length;
    };
    // The same conflicting request five times: one refusal kept.
    for (let i = 0; i < 5; i += 1) {
      const again = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send({ ...body, amount: 3_000 });
      expect(again.status).toBe(409);
      expect(again.body.error.message).toContain('was not sent');
    }
    expect(await refusals()).toBe(1);
    // Many different ones: kept up to the bound, then logged only; the effect stays committed and nothing is sent.
    for (let i = 0; i < CONFLICT_EVIDENCE_MAX + 5; i += 1) expect((await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send({ ...body, amount: 100 + i })).status).toBe(409);
    expect(await refusals()).toBe(CONFLICT_EVIDENCE_MAX);
    const detail = await request(rig.app).get(`/v1/effects/${first.body.effect_id}`).set(bearer(TOKENS.support));
    expect(detail.body.outcome).toBe('COMMITTED');
    expect(rig.target.landings).toHaveLength(1);
  });
});
