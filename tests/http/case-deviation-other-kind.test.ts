// Rule: re-approving a model_deviated item approves the model's decision, so a model that chose another kind of money
// than its case asks for (issue_credit on a refund case) gets an item that offers only a dismissal: its deviation is
// recorded as the case's refund of the cents asked for, and re-approving it would refund the payment, which the model
// never decided. The item says so and what a person does instead, on the item and in the inbox listing alike (the
// page and the CLI show the same fields); nothing reaches the sandbox, and the dismissal closes it (found by review:
// wrong-kind-reapproval).
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { replies } from '../decider/messages-server.js';
import { casesSuite, modelDecider } from '../support/cases-rig.js';
import { bearer, caseBody, TOKENS } from './rig.js';

const { rig, server } = casesSuite();

describe('a model that credits on a refund case', () => {
  it('opens a model_deviated item offering only a dismissal, saying why and which refund a re-approval would have sent', async () => {
    rig.useDecider(modelDecider(server));
    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_credit', { amount_cents: 1500, description: 'Credit $15.00 to the account' }));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const answer = await request(rig.app).post('/v1/cases?wait=20').set(bearer(TOKENS.support)).send(caseBody({ payment_intent: paymentIntent, approval }));
    expect(answer.body).toMatchObject({ state: 'deviated', outcome: 'MODEL_DEVIATED' });
    const itemId = `model_deviated:${String(answer.body.effect.effect_id)}`;

    const item = await request(rig.app).get(`/v1/inbox/${itemId}`).set(bearer(TOKENS.approver));
    expect(item.status, JSON.stringify(item.body)).toBe(200);
    expect(item.body).toMatchObject({ kind: 'model_deviated', status: 'open', subject: `payment:${paymentIntent}`, actions: ['dismiss'], detail: { decided_action: 'credit', decided_cents: 1_500 } });
    const happened = String(item.body.happened);
    expect(happened).toContain('The model chose a credit where the case asks for a refund, so its decision is not offered for re-approval');
    expect(happened).toContain(`re-approved, it would send a refund of $15.00 to payment ${paymentIntent}, which the model never decided`);
    expect(happened).not.toContain('approve the amount the model asked for');
    const listed = await request(rig.app).get('/v1/inbox?kind=model_deviated&limit=100').set(bearer(TOKENS.approver));
    expect((listed.body.data as { id: string; actions: string[] }[]).find((open) => open.id === itemId)?.actions).toEqual(['dismiss']);

    // Asked for all the same (the API, the CLI, a page form posted by hand): refused 409 with why, nothing written on
    // the receipt, the item open.
    const before = (await request(rig.app).get(`/v1/effects/${String(answer.body.effect.effect_id)}`).set(bearer(TOKENS.auditor))).body.journal as unknown[];
    const { approval: another } = await rig.paymentWithApproval(2_000);
    const forced = await request(rig.app).post(`/v1/inbox/${itemId}/reapprove`).set(bearer(TOKENS.approver)).send({ approval: another, note: 'send it anyway' });
    expect(forced.status, JSON.stringify(forced.body)).toBe(409);
    expect(forced.body.error).toMatchObject({ code: 'action_not_allowed' });
    expect(forced.body.error.message).toContain('its model chose a credit where the case asks for a refund');
    expect((await request(rig.app).get(`/v1/effects/${String(answer.body.effect.effect_id)}`).set(bearer(TOKENS.auditor))).body.journal).toEqual(before);
    expect((await rig.stores.inbox.get(itemId))?.status).toBe('open');

    const dismissed = await request(rig.app).post(`/v1/inbox/${itemId}/dismiss`).set(bearer(TOKENS.approver)).send({ note: 'The model credited; the case goes again as a new case.' });
    expect(dismissed.status, JSON.stringify(dismissed.body)).toBeLessThan(300);
    expect((await rig.stores.inbox.get(itemId))?.status).toBe('closed');
    expect(await rig.refundsAt(paymentIntent)).toEqual([]);
  });
});
