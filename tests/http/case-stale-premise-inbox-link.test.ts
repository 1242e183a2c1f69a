// Rule: a case whose effect has an open inbox item (a stale premise: the payment was refunded by hand between the
// decision and the send) links that item for a role that may read the inbox, as a deviated case links its
// model_deviated item, and its sentence says what a person may do there (re-approve it, or dismiss it); a role that
// may not read the inbox gets no link. Before, `links.inbox` was null for every role (it was set only for `deviated`
// and `failed` cases) and the sentence was the bare outcome sentence, although inbox item stale_premise:<effect> was
// open and re-approvable.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { casesSuite } from '../support/cases-rig.js';
import { bearer, caseBody, TOKENS } from './rig.js';

const { rig } = casesSuite();

describe('a case refused on a stale premise', () => {
  it('links its open inbox item for a role that may read the inbox and says what to do there', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    // A person refunds $5 by hand in the Dashboard after the decision, before the send.
    rig.wrapSink((sink) => ({
      propose: async (proposal, how) => {
        await rig.stripe.refunds.create({ payment_intent: paymentIntent, amount: 500 });
        return sink.propose(proposal, how);
      },
    }));
    const body = caseBody({ payment_intent: paymentIntent, approval });
    const answer = await request(rig.app).post('/v1/cases?wait=20').set(bearer(TOKENS.support)).send(body);
    expect(answer.body).toMatchObject({ state: 'proposed', outcome: 'REFUSED:stale_premise' });
    const effectId = String(answer.body.effect.effect_id);
    const itemId = `stale_premise:${effectId}`;
    const item = await request(rig.app).get(`/v1/inbox/${itemId}`).set(bearer(TOKENS.approver));
    expect(item.status).toBe(200);
    expect(item.body).toMatchObject({ status: 'open', actions: ['reapprove', 'dismiss'] });
    expect((await rig.refundsAt(paymentIntent)).map((refund) => refund.amount)).toEqual([500]);

    for (const token of [TOKENS.auditor, TOKENS.operator]) {
      const shown = await request(rig.app).get(`/v1/cases/${String(body.case_id)}`).set(bearer(token));
      expect(shown.status).toBe(200);
      expect(shown.body.links.inbox).toBe(`/v1/inbox/${itemId}`);
      expect(shown.body.sentence).toContain(`Inbox item ${itemId} is open on it: a person may re-approve it under a live approval or dismiss it there`);
    }
    // Support may not read the inbox: no link for it (the sentence still names the item, as a deviated case's does).
    const asSupport = await request(rig.app).get(`/v1/cases/${String(body.case_id)}`).set(bearer(TOKENS.support));
    expect(asSupport.body.links.inbox).toBeNull();

    // Dismissed, the item is no longer where the case's money is acted on: the link goes.
    const dismissed = await request(rig.app).post(`/v1/inbox/${itemId}/dismiss`).set(bearer(TOKENS.approver)).send({ note: 'refunded by hand already' });
    expect(dismissed.status, JSON.stringify(dismissed.body)).toBe(200);
    const after = await request(rig.app).get(`/v1/cases/${String(body.case_id)}`).set(bearer(TOKENS.auditor));
    expect(after.body.links.inbox).toBeNull();
    expect(after.body.sentence).not.toContain('is open on it');
  });
});
