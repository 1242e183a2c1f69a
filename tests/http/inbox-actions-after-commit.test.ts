// Rule: an item lists only actions that can succeed. A stale_premise item whose request was then re-decided and
// COMMITTED through another path (money moved after the item opened) lists no reapprove, in its own read and in the
// listing, and still refuses one 409; dismiss stays. It used to stay open offering reapprove, which answered 409.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { latestProposal } from '../../src/interlock.js';
import { inboxSuite } from './inbox-items.js';
import { bearer, TOKENS } from './rig.js';

const { rig, make } = inboxSuite();

describe('an item whose money moved after it opened', () => {
  it('no longer offers a re-approval, and is still dismissed', async () => {
    const { pi, effectId, item } = await make.stale();
    expect((await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver))).body.actions).toEqual(['reapprove', 'dismiss']);
    const original = await latestProposal(rig.stores, effectId);
    const redecided = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send({ request_id: original?.requestId, payment_intent: pi, amount: 2_000, approval: await make.grant(pi), reason: 'requested_by_customer' });
    expect(redecided.status, JSON.stringify(redecided.body)).toBe(202);
    expect(await make.submitLatest(effectId)).toBe('COMMITTED');

    const shown = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    const listed = await request(rig.app).get(`/v1/inbox?effect=${effectId}`).set(bearer(TOKENS.approver));
    expect({ shown: [shown.body.status, shown.body.actions], listed: listed.body.data.map((entry: { id: string; actions: string[] }) => [entry.id, entry.actions]) }).toEqual({ shown: ['open', ['dismiss']], listed: [[item, ['dismiss']]] });
    const reapproved = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.approver)).send({ approval: await make.grant(pi) });
    expect({ status: reapproved.status, code: reapproved.body.error?.code }).toEqual({ status: 409, code: 'action_not_allowed' });
    expect((await request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(bearer(TOKENS.approver)).send({ note: 'Re-decided and sent as its own request.' })).status).toBe(200);
  });
});
