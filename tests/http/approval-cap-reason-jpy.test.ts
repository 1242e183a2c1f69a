// Rule: an amount an operator reads is stated in its money's currency (src/core/money-text.ts): POST /v1/refunds for a
// ¥6,000 refund under an approval capped at 5000 on a jpy payment answers (refused before recording), and the gate's
// refusal of the same proposal records, "covers at most 5000 JPY, not 6000 JPY", never "5000 cents".
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { approvalBody, bearer, refundBody, rigSuite, TOKENS, uid } from './rig.js';

const rig = rigSuite({ worker: true, deps: { premises: { refund: ['chargebacks', 'refunded_by_others', 'currency'], credit: ['subscription_status', 'incident_compensation'] } } });

describe('a jpy refund over its approval', () => {
  it('is refused with the cap and the amount in JPY, in the answer and in the effect', async () => {
    const pi = `pi_${uid()}`;
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0, currency: 'jpy' });
    const approval = approvalBody({ scope: `payment:${pi}`, cap_cents: 5_000 });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    // A new request is refused at the API before it is recorded (invalid_approval), in the payment's currency.
    const answer = await request(rig.app).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: pi, amount: 6_000, approval: approval.id }));
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('invalid_approval');
    expect(answer.body.error.message).toContain(`approval ${String(approval.id)} covers at most 5000 JPY, not 6000 JPY`);
    // The gate states it so too, for a proposal recorded without the API (its queue), and the effect records it.
    const recorded = await rig.queue.propose({ requestId: `case-${uid()}`, agent: 'sam', approval: String(approval.id), premises: { chargebacks: [], refunded_by_others: 0, currency: 'jpy' }, effect: { kind: 'refund', paymentIntent: pi, amount: 6_000 } });
    expect((await rig.queue.waitFor(recorded.effectId, 10_000))?.outcome).toBe('REFUSED:lease');
    const detail = await request(rig.app).get(`/v1/effects/${recorded.effectId}`).set(bearer(TOKENS.support));
    expect(detail.body.reason).toBe(`approval ${String(approval.id)} covers at most 5000 JPY, not 6000 JPY`);
  });
});
