// Rule: a re-approval refused for want of room under the caps states that room as money in the refused effect's
// currency, as the gate's own over-cap reason does: on a jpy payment the approval "has 1500 JPY of its 2500 JPY left",
// never "1500 of its 2500 cents" (which reads as $15.00 and invites a cap a hundred times too large).
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/interlock.js';
import { createItemMaker, type ItemMaker } from './inbox-items.js';
import { bearer, refundBody, startRig, TOKENS, uid, type Rig } from './rig.js';

let rig: Rig;
let make: ItemMaker;

beforeAll(async () => {
  rig = await startRig({ deps: { premises: { refund: ['chargebacks', 'refunded_by_others', 'currency'], credit: ['subscription_status', 'incident_compensation'] } } });
  make = await createItemMaker(rig);
});
afterAll(async () => {
  await make.close();
  await rig.close();
});

/** A ¥2000 refund on a jpy payment, decided on its currency and refused at the send for a chargeback opened since. */
async function refusedYenRefund(): Promise<{ pi: string; item: string }> {
  const pi = `pi_${uid()}`;
  rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0, currency: 'jpy' });
  const body = refundBody({ payment_intent: pi, approval: await make.grant(pi), amount: 2_000 });
  expect((await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(body)).status).toBe(202);
  const effectId = effectIdFor({ requestId: String(body.request_id), effect: null });
  rig.target.world.set(`payment:${pi}`, { chargebacks: ['du_opened'], refunded_by_others: 0, currency: 'jpy' });
  expect(await make.submitLatest(effectId)).toBe('REFUSED:stale_premise');
  return { pi, item: `stale_premise:${effectId}` };
}

describe('re-approving a jpy refund without room under the caps', () => {
  it('states the approval\'s room in JPY, not cents', async () => {
    const { pi, item } = await refusedYenRefund();
    const approval = `ap_yen_${pi}`;
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: approval, approver: 'alex', cap_cents: 2_500, scope: `payment:${pi}`, max_uses: 5 })).status).toBe(201);
    rig.target.world.set(`payment:${pi}`, { chargebacks: ['du_opened'], refunded_by_others: 0, currency: 'jpy' });
    const other = refundBody({ payment_intent: pi, approval, amount: 1_000 });
    expect((await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(other)).status).toBe(202);
    expect(await make.submitLatest(effectIdFor({ requestId: String(other.request_id), effect: null }))).toBe('COMMITTED');

    const reapproved = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval, note: 'refund anyway' });
    expect(reapproved.status).toBe(400);
    expect(reapproved.body.error.message).toContain(`approval ${approval} has 1500 JPY of its 2500 JPY left (1000 JPY held by effects under it), not 2000 JPY`);
    expect(reapproved.body.error.message).not.toContain('cents');
  });

  it('states the shared cap\'s room in JPY, not cents', async () => {
    const { pi, item } = await refusedYenRefund();
    const approval = `ap_yen_${pi}`;
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: approval, approver: 'alex', cap_cents: 5_000, scope: `payment:${pi}` })).status).toBe(201);
    expect((await request(rig.app).put(`/v1/caps/payment:${pi}`).set(bearer(TOKENS.approver)).send({ cap_cents: 1_500 })).status).toBe(200);

    const reapproved = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval, note: 'refund anyway' });
    expect(reapproved.status).toBe(400);
    expect(reapproved.body.error.message).toContain(`the cap on payment:${pi} has 1500 JPY of its 1500 JPY left, not 2000 JPY`);
    expect(reapproved.body.error.message).not.toContain('cents');
  });
});
