// Four eyes (an approval's approver, and whoever granted it, may not propose under it) must hold however the proposer
// is named and whenever the approval is granted. A proposal under an approval nobody has granted yet had no rule to
// meet: dana proposed under a new id, then granted that id to herself with four eyes, and the queued refund went out.
// A name spelled with look-alike characters (fullwidth letters, a zero-width space) passed the case-blind comparison,
// and so did one whose case differs only as Unicode folds it (Strauß and STRAUSS).
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { effectIdFor, personKey } from '../../src/interlock.js';
import { approvalBody, bearer, refundBody, rigSuite, TOKENS, uid } from './rig.js';

const rig = rigSuite();

function payment(): string {
  const pi = `pi_${uid()}`;
  rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
  return pi;
}

describe('four eyes', () => {
  it('refuses a proposal under an approval nobody has granted yet (404 unknown_approval, nothing recorded), so its proposer cannot grant it to herself after', async () => {
    const pi = payment();
    const approval = `ap_${uid()}`;
    const body = refundBody({ payment_intent: pi, approval });
    const proposed = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.danaSupport)).send(body);
    expect(proposed.status).toBe(404);
    expect(proposed.body.error).toMatchObject({ code: 'unknown_approval' });
    expect(proposed.body.error.message).toContain('grant it first');
    const effectId = effectIdFor({ requestId: String(body.request_id), effect: { kind: 'refund', paymentIntent: pi, amount: 2_000, reason: 'requested_by_customer' } });
    expect((await request(rig.app).get(`/v1/effects/${effectId}`).set(bearer(TOKENS.auditor))).status).toBe(404);

    // Granted now, by dana naming herself, with four eyes: her proposal is refused as any approver's is.
    const granted = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.danaApprover)).send({ id: approval, approver: 'dana', cap_cents: 5_000, scope: `payment:${pi}`, four_eyes: true });
    expect(granted.status).toBe(201);
    const again = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.danaSupport)).send(body);
    expect(again.status).toBe(403);
    expect(again.body.error).toMatchObject({ code: 'four_eyes' });
  });

  it.each([
    ['in another case', 'Alex'],
    ['in fullwidth letters', 'ａｌｅｘ'],
  ])('refuses the approver as agent when the name is spelled %s', async (_how, agent) => {
    const pi = payment();
    const approval = approvalBody({ scope: `payment:${pi}`, approver: 'alex', four_eyes: true });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.danaApprover)).send(approval)).status).toBe(201);
    const proposed = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: pi, approval: approval.id, agent }));
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(403);
    expect(proposed.body.error).toMatchObject({ code: 'four_eyes' });
    // Someone else may propose under it.
    expect((await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: pi, approval: approval.id, agent: 'alexandra' }))).status).toBe(202);
  });

  it.each([
    ['Strauß', 'STRAUSS'],
    ['Strauß', 'strauss'],
    ['ΝΙΚΟΣ', 'νικοσ'],
    ['νικος', 'ΝΙΚΟΣ'],
  ])('refuses the approver %s proposing as agent %s: case is ignored as Unicode folds it (ß is ss, ς is σ), not only by lower-casing', async (approver, agent) => {
    const pi = payment();
    const approval = approvalBody({ scope: `payment:${pi}`, approver, four_eyes: true });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.danaApprover)).send(approval)).status).toBe(201);
    const proposed = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: pi, approval: approval.id, agent }));
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(403);
    expect(proposed.body.error).toMatchObject({ code: 'four_eyes' });
  });

  it.each([
    ['with a zero-width space inside', 'a\u200blex', 'U+200B'],
    ['with a zero-width space at the end', 'alex\u200b', 'U+200B'],
    ['with a zero-width joiner inside', 'al\u200dex', 'U+200D'],
  ])('refuses the approver as agent spelled %s before any rule is weighed: no name that arrives holds an invisible character', async (_how, agent, point) => {
    const pi = payment();
    const approval = approvalBody({ scope: `payment:${pi}`, approver: 'alex', four_eyes: true });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.danaApprover)).send(approval)).status).toBe(201);
    const proposed = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: pi, approval: approval.id, agent }));
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(400);
    expect(proposed.body.error.fields).toEqual([expect.objectContaining({ path: 'agent', message: expect.stringContaining(point) })]);
    // A name recorded before that rule (an approver granted with one) is still the same person to the rule.
    expect(personKey(agent)).toBe(personKey('alex'));
  });
});
