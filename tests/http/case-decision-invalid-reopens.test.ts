// Rule: a case that failed with decision_invalid (the model answered, but with no usable decision) proposed nothing,
// so it is no dead end: its error says to submit the case again or decide it by hand, and the same case submitted
// again (same id, same payload) is reopened and the model asked again, as a case failed with decider_unavailable is.
// The worker does not ask again by itself: the failure is at once, after one answer.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { caseEffectId } from '../../queues/decisions.js';
import { replies } from '../decider/messages-server.js';
import { casesSuite, modelDecider } from '../support/cases-rig.js';
import { bearer, caseBody, TOKENS } from './rig.js';

const { rig, server } = casesSuite();

const post = (body: Record<string, unknown>) => request(rig.app).post('/v1/cases?wait=10').set(bearer(TOKENS.support)).send(body);

describe('a case failed by one bad model answer', () => {
  it('says how to get it decided, and submitted again it is asked again and proposed', async () => {
    rig.useDecider(modelDecider(server));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    server.script(replies.maxTokens());
    const body = caseBody({ payment_intent: paymentIntent, approval });
    const first = await post(body);
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ state: 'failed', outcome: 'decision_invalid', attempts: 1, effect: null, error: { code: 'decision_invalid' } });
    expect(first.body.error.message).toContain(`Nothing was proposed; submit the case again (the same id and payload) to ask the model again, or decide it by hand with POST /v1/refunds (npx interlock refund) under approval ${approval}.`);
    expect(server.received).toHaveLength(1);
    expect(await rig.stores.journal.partitionOf(caseEffectId(String(body.case_id)))).toBeNull();

    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 2_000, reason: 'Cracked jar; approved goodwill refund.' }));
    const again = await post(body);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ state: 'proposed', error: null, decision: { action: 'refund', amount_cents: 2_000 }, effect: { outcome: 'COMMITTED' } });
    expect(server.received).toHaveLength(3);
    expect((await rig.refundsAt(paymentIntent)).map((refund) => refund.amount)).toEqual([2_000]);

    // Decided now: submitted once more, it is answered as it stands, and the model is not asked.
    const third = await post(body);
    expect(third.body).toMatchObject({ state: 'proposed', effect: { effect_id: again.body.effect.effect_id } });
    expect(server.received).toHaveLength(3);
  });
});
