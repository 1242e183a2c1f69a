// Rule: POST /v1/refunds and /v1/credits refuse a proposal under a request id not recorded yet, with nothing recorded
// (400 invalid_approval), when its approval is one the gate could only refuse: revoked, expired, its cap below the
// amount, every use spent (a use held by an effect in flight counts, as the dispatch step counts it), or of another
// payment or customer than the effect's. Recorded, each
// would be refused all the same and kept for ever, so a client retrying under fresh request ids would fill Redis. A
// request id recorded already is answered as it stands, whatever its approval is now.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/interlock.js';
import { approvalBody, bearer, creditBody, refundBody, rigSuite, TOKENS, uid } from './rig.js';

const rig = rigSuite({ worker: true });
const support = () => bearer(TOKENS.support);

async function payment(approval: Record<string, unknown> = {}): Promise<{ pi: string; approval: string }> {
  const pi = `pi_${uid()}`;
  rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
  const body = approvalBody({ scope: `payment:${pi}`, ...approval });
  expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(body)).status).toBe(201);
  return { pi, approval: String(body.id) };
}

/** Nothing is recorded under the request id: no effect bound to it, none listed. */
async function nothingRecordedFor(body: Record<string, unknown>): Promise<void> {
  const requestId = String(body.request_id);
  const effect = body.payment_intent !== undefined ? { kind: 'refund', paymentIntent: body.payment_intent } : { kind: 'credit', customer: body.customer };
  expect(await rig.stores.journal.partitionOf(effectIdFor({ requestId, effect }))).toBeNull();
  expect((await request(rig.app).get(`/v1/effects?request=${requestId}`).set(support())).body.data).toEqual([]);
}

describe('a new proposal under an approval the gate could only refuse', () => {
  it('is refused before recording once every use is spent; the recorded request is answered as it stands', async () => {
    const { pi, approval } = await payment({ max_uses: 1, cap_cents: 2_000 });
    const first = refundBody({ payment_intent: pi, approval, amount: 500 });
    const committed = await request(rig.app).post('/v1/refunds?wait=10').set(support()).send(first);
    expect(committed.body.outcome).toBe('COMMITTED');
    for (let i = 0; i < 3; i += 1) {
      const fresh = refundBody({ payment_intent: pi, approval, amount: 500 });
      const answer = await request(rig.app).post('/v1/refunds').set(support()).send(fresh);
      expect(answer.status).toBe(400);
      expect(answer.body.error.code).toBe('invalid_approval');
      expect(answer.body.error.message).toContain(`approval ${approval} has used all 1 of its uses`);
      expect(answer.body.error.message).toContain('Nothing was recorded');
      expect(answer.body.error.message).toContain('Grant a new approval');
      await nothingRecordedFor(fresh);
    }
    // The committed request sent again is its recorded standing, as before.
    const again = await request(rig.app).post('/v1/refunds').set(support()).send(first);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ effect_id: committed.body.effect_id, outcome: 'COMMITTED' });
    expect(rig.target.landedCount(String(committed.body.effect_id))).toBe(1);
  });

  it('counts a use held by an effect in flight, as the gate does', async () => {
    const { pi, approval } = await payment({ max_uses: 1 });
    rig.target.inject({ kind: 'slow-answer', delayMs: 600, answer: 'landed' });
    const proposed = await request(rig.app).post('/v1/refunds').set(support()).send(refundBody({ payment_intent: pi, approval, amount: 500 }));
    const effectId = String(proposed.body.effect_id);
    let state = '';
    for (let i = 0; i < 200 && state !== 'dispatched'; i += 1) {
      state = String((await request(rig.app).get(`/v1/effects/${effectId}`).set(support())).body.state);
      if (state !== 'dispatched') await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(state).toBe('dispatched');
    const fresh = refundBody({ payment_intent: pi, approval, amount: 500 });
    const answer = await request(rig.app).post('/v1/refunds').set(support()).send(fresh);
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('invalid_approval');
    await nothingRecordedFor(fresh);
    await rig.queue.waitFor(effectId, 10_000);
  });

  it('is refused once revoked; a request recorded before is answered as it stands', async () => {
    const { pi, approval } = await payment();
    const before = refundBody({ payment_intent: pi, approval, amount: 500 });
    const committed = await request(rig.app).post('/v1/refunds?wait=10').set(support()).send(before);
    expect(committed.body.outcome).toBe('COMMITTED');
    expect((await request(rig.app).post(`/v1/approvals/${approval}/revoke`).set(bearer(TOKENS.approver))).status).toBe(200);
    const fresh = refundBody({ payment_intent: pi, approval, amount: 500 });
    const answer = await request(rig.app).post('/v1/refunds').set(support()).send(fresh);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'invalid_approval', fields: [{ path: 'approval', message: `approval ${approval} was revoked` }] });
    await nothingRecordedFor(fresh);
    const again = await request(rig.app).post('/v1/refunds').set(support()).send(before);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ effect_id: committed.body.effect_id, outcome: 'COMMITTED' });
  });

  it('is refused when its amount is over the approval cap, for a credit too', async () => {
    const customer = `cus_${uid()}`;
    const approval = approvalBody({ scope: `customer:${customer}`, cap_cents: 1_000 });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const over = creditBody({ customer, approval: approval.id, amount: 1_500 });
    const answer = await request(rig.app).post('/v1/credits').set(support()).send(over);
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('invalid_approval');
    expect(answer.body.error.message).toContain(`approval ${String(approval.id)} covers at most`);
    await nothingRecordedFor(over);
    // Within the cap, the same approval is recorded as before.
    const within = await request(rig.app).post('/v1/credits').set(support()).send(creditBody({ customer, approval: approval.id, amount: 500 }));
    expect(within.status).toBe(202);
  });

  it('is refused when the approval covers another payment or customer, and leaves the request id free', async () => {
    const { approval } = await payment();
    const other = `pi_${uid()}`;
    rig.target.world.set(`payment:${other}`, { chargebacks: [], refunded_by_others: 0 });
    const elsewhere = refundBody({ payment_intent: other, approval, amount: 100 });
    const answer = await request(rig.app).post('/v1/refunds').set(support()).send(elsewhere);
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('invalid_approval');
    expect(answer.body.error.message).toContain(`covers payment:pi_`);
    expect(answer.body.error.message).toContain(`not payment:${other}`);
    await nothingRecordedFor(elsewhere);
    const credit = creditBody({ customer: `cus_${uid()}`, approval, amount: 100 });
    expect((await request(rig.app).post('/v1/credits').set(support()).send(credit)).body.error?.code).toBe('invalid_approval');
    await nothingRecordedFor(credit);
  });
});
