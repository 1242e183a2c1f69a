// Rule: an approval that can still move money can always be revoked through the API. On a cluster a failover of the
// index's master can lose an approval id's binding while the approval stands on its subject, where a dispatch reads
// it. `?subject=` on GET and "subject" in the revoke's body find it there (with the options it was granted with); the
// revoke binds its id again, after which it is found by its id alone.
// The failover is simulated by deleting the binding field, which is what a replica that missed the HSETNX holds.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { approvalBody, bearer, rigSuite, TOKENS, uid } from './rig.js';

const rig = rigSuite();

describe('an approval whose id binding was lost, through the API', () => {
  it('is shown and revoked on its subject, and its id bound to it again', async () => {
    const subject = `payment:pi_${uid()}`;
    const approval = approvalBody({ scope: subject, four_eyes: true });
    const id = String(approval.id);
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.danaApprover)).send(approval)).status).toBe(201);
    expect(await rig.redis.hdel(rig.stores.keys.approvalPartitions, id)).toBe(1);

    expect((await request(rig.app).get(`/v1/approvals/${id}`).set(bearer(TOKENS.approver))).status).toBe(404);
    const shown = await request(rig.app).get(`/v1/approvals/${id}`).query({ subject }).set(bearer(TOKENS.approver));
    expect(shown.status, JSON.stringify(shown.body)).toBe(200);
    expect(shown.body).toMatchObject({ id, scope: subject, four_eyes: true, revoked: false, live: true });
    expect((await request(rig.app).get(`/v1/approvals/${id}`).query({ subject: 'payment:pi_elsewhere' }).set(bearer(TOKENS.approver))).status).toBe(404);
    expect((await request(rig.app).get(`/v1/approvals/${id}`).query({ subject: 'pi_1' }).set(bearer(TOKENS.approver))).status).toBe(400);

    expect((await request(rig.app).post(`/v1/approvals/${id}/revoke`).set(bearer(TOKENS.approver))).status).toBe(404);
    const revoked = await request(rig.app).post(`/v1/approvals/${id}/revoke`).set(bearer(TOKENS.approver)).send({ subject });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect(revoked.body).toMatchObject({ object: 'revocation', id, already_revoked: false });
    expect(revoked.body.sentence).toContain('bound to it again');

    const after = await request(rig.app).get(`/v1/approvals/${id}`).set(bearer(TOKENS.approver));
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({ revoked: true, four_eyes: true, live: false });
  });
});
