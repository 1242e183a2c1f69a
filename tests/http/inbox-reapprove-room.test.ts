// A re-approval closes its item for good and blocks the old effect for good, so one the gate would refuse is refused
// before anything is written. An approval's cap covers every effect under it: one whose room left is less than the
// payload (or a subject cap without room) was accepted, the item closed, and the gate refused the new request
// REFUSED:over_cap, which opens no item: the person's decision was lost, nothing moved and nothing was left to act on.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/interlock.js';
import { inboxSuite } from './inbox-items.js';
import { approvalBody, bearer, creditBody, refundBody, TOKENS, uid } from './rig.js';

const { rig, make } = inboxSuite();

describe('re-approving without room under the caps', () => {
  it('is refused (400 naming the room left) when the approval has reserved too much of its cap; the item stays open for one with room', async () => {
    const { pi, item } = await make.stale(); // a $20 refund refused on a stale premise
    // Approval B: $25 cap, five uses; $10 of it goes to another refund of the payment first.
    const approval = `ap_b_${pi}`;
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: approval, approver: 'alex', cap_cents: 2_500, scope: `payment:${pi}`, max_uses: 5 })).status).toBe(201);
    rig.target.world.set(`payment:${pi}`, { chargebacks: ['du_opened'], refunded_by_others: 0 });
    const other = refundBody({ payment_intent: pi, approval, amount: 1_000 });
    expect((await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(other)).status).toBe(202);
    expect(await make.submitLatest(effectIdFor({ requestId: String(other.request_id), effect: null }))).toBe('COMMITTED');

    const reapproved = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval, note: 'refund anyway' });
    expect(reapproved.status).toBe(400);
    expect(reapproved.body.error.code).toBe('invalid_approval');
    expect(reapproved.body.error.message).toContain(`approval ${approval} has 1500 (minor units, currency unknown) of its 2500 (minor units, currency unknown) left (1000 (minor units, currency unknown) held by effects under it), not 2000 (minor units, currency unknown)`);
    expect((await rig.stores.inbox.get(item))?.status).toBe('open');

    // Under an approval with room, the same item is re-approved.
    const roomy = `ap_c_${pi}`;
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: roomy, approver: 'alex', cap_cents: 2_000, scope: `payment:${pi}` })).status).toBe(201);
    expect((await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval: roomy, note: 'refund anyway' })).status).toBe(202);
  });

  it('is refused for a credit whose incident another credit was sent for since (the dispatch step holds it)', async () => {
    const customer = `cus_${uid()}`;
    const approval = approvalBody({ scope: `customer:${customer}`, cap_cents: 5_000 });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    rig.target.world.set(`customer:${customer}`, { subscription_status: 'active', incident_compensation: 0 });
    const first = creditBody({ customer, incident: 'INC-9', approval: approval.id });
    expect((await request(rig.app).post('/v1/credits').set(bearer(TOKENS.support)).send(first)).status).toBe(202);
    // The subscription was canceled between the decision and the send: refused on a stale premise, an item opens.
    rig.target.world.set(`customer:${customer}`, { subscription_status: 'canceled', incident_compensation: 0 });
    const refused = effectIdFor({ requestId: String(first.request_id), effect: null });
    expect(await make.submitLatest(refused)).toBe('REFUSED:stale_premise');
    // Another agent's credit for the same incident is sent meanwhile, and holds it.
    rig.target.world.set(`customer:${customer}`, { subscription_status: 'active', incident_compensation: 0 });
    const other = creditBody({ customer, incident: 'INC-9', approval: approval.id });
    expect((await request(rig.app).post('/v1/credits').set(bearer(TOKENS.support)).send(other)).status).toBe(202);
    const holder = effectIdFor({ requestId: String(other.request_id), effect: null });
    expect(await make.submitLatest(holder)).toBe('COMMITTED');

    const item = `stale_premise:${refused}`;
    const reapproved = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval: approval.id, note: 'credit anyway' });
    expect(reapproved.status).toBe(400);
    expect(reapproved.body.error.message).toContain(`incident INC-9 of customer:${customer} is compensated once, and effect ${holder} was sent for it already`);
    expect((await rig.stores.inbox.get(item))?.status).toBe('open');
  });

  it('is refused when the subject cap has no room for the payload', async () => {
    const { pi, item } = await make.stale();
    const approval = `ap_b_${pi}`;
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: approval, approver: 'alex', cap_cents: 5_000, scope: `payment:${pi}` })).status).toBe(201);
    expect((await request(rig.app).put(`/v1/caps/payment:${pi}`).set(bearer(TOKENS.approver)).send({ cap_cents: 1_500 })).status).toBe(200);

    const reapproved = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval, note: 'refund anyway' });
    expect(reapproved.status).toBe(400);
    expect(reapproved.body.error.message).toContain(`the cap on payment:${pi} has 1500 (minor units, currency unknown) of its 1500 (minor units, currency unknown) left, not 2000 (minor units, currency unknown)`);
    expect((await rig.stores.inbox.get(item))?.status).toBe('open');
  });
});
