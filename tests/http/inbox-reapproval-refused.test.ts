// Rule: a re-approval the gate refuses over the caps or under a dead approval opens an inbox item on its own effect, so
// the person's decision is never lost with nothing left to act on: the item it re-approved closed for good when it was
// recorded. Two items re-approved one after the other under one approval with room for one payload: the second is
// accepted (the first is recorded and queued, not yet holding its room), then refused REFUSED:over_cap at the send.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { effectIdFor, reapprovalRequestId } from '../../src/interlock.js';
import { inboxSuite } from './inbox-items.js';
import { bearer, refundBody, TOKENS, uid } from './rig.js';

const { rig, make } = inboxSuite();

describe('a re-approval refused at the send', () => {
  it('opens a reapproval_refused item on the new request, which can be re-approved under an approval with room', async () => {
    const pi = `pi_${uid()}`;
    const first = await make.staleOn(pi); // $20 refused on a stale premise
    const second = await make.staleOn(pi); // another $20 on the same payment
    const approval = `ap_one_${uid()}`;
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: approval, approver: 'alex', cap_cents: 2_000, scope: `payment:${pi}`, max_uses: 5 })).status).toBe(201);
    const a = await request(rig.app).post(`/v1/inbox/${first.item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval, note: 'refund anyway' });
    const b = await request(rig.app).post(`/v1/inbox/${second.item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval, note: 'refund this one too' });
    expect([a.status, b.status]).toEqual([202, 202]);

    expect(await make.submitLatest(String(a.body.effect_id))).toBe('COMMITTED');
    const refusedEffect = String(b.body.effect_id);
    expect(await make.submitLatest(refusedEffect)).toBe('REFUSED:over_cap');
    expect((await rig.stores.inbox.get(second.item))?.closure?.action).toBe('reapprove');
    const open = await rig.stores.inbox.list({ status: 'open', effect: refusedEffect }, 10);
    expect(open.data.map((item) => ({ id: item.id, kind: item.kind, actions: item.actions, centsAtStake: item.centsAtStake }))).toEqual([
      { id: `reapproval_refused:${refusedEffect}`, kind: 'reapproval_refused', actions: ['reapprove', 'dismiss'], centsAtStake: 2_000 },
    ]);
    expect(open.data[0]?.happened).toContain(`re-approval of item ${second.item}`);

    // The person acts again, under an approval with room: the payload goes out once.
    const roomy = `ap_room_${uid()}`;
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: roomy, approver: 'alex', cap_cents: 2_000, scope: `payment:${pi}`, max_uses: 1 })).status).toBe(201);
    const again = await request(rig.app).post(`/v1/inbox/reapproval_refused:${refusedEffect}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval: roomy, note: 'under an approval with room' });
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    expect(again.body.effect_id).toBe(effectIdFor({ requestId: reapprovalRequestId(`reapproval_refused:${refusedEffect}`), effect: null }));
    expect(await make.submitLatest(String(again.body.effect_id))).toBe('COMMITTED');
  });

  it('opens no item for an ordinary request refused over its cap: its caller reads the refusal', async () => {
    const pi = `pi_${uid()}`;
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    const approval = `ap_small_${uid()}`;
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: approval, approver: 'alex', cap_cents: 3_000, scope: `payment:${pi}`, max_uses: 5 })).status).toBe(201);
    const effects: string[] = [];
    for (let n = 0; n < 2; n += 1) {
      const body = refundBody({ payment_intent: pi, approval });
      expect((await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(body)).status).toBe(202);
      effects.push(effectIdFor({ requestId: String(body.request_id), effect: null }));
    }
    expect(await make.submitLatest(effects[0] ?? '')).toBe('COMMITTED');
    expect(await make.submitLatest(effects[1] ?? '')).toBe('REFUSED:over_cap');
    expect((await rig.stores.inbox.list({ status: 'open', effect: effects[1] }, 10)).data).toEqual([]);
  });
});
