// Rule: a re-approval from the page whose request the gate finds recorded before with another payload (a proposal that
// raced it under the same request id) moved nothing, and the page says so (409 conflicting_payload), as the API does:
// it never redirects to "Re-approved: a new request … was recorded and queued".
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { inboxSuite } from '../http/inbox-items.js';
import { factsShownOnPage } from '../http/page-facts-shown.js';
import { pageSession } from '../http/page-sessions.js';
import { bearer, TOKENS, uid } from '../http/rig.js';

const { rig, make } = inboxSuite();

describe('a re-approval from the page that the gate answers as a conflict', () => {
  it('is shown as the conflict, not as recorded and queued', async () => {
    const pi = `pi_${uid()}`;
    const { item } = await make.staleOn(pi);
    const approval = `ap_conflict_${uid()}`;
    const dana = await pageSession(rig.app, TOKENS.danaApprover);
    const shown = await factsShownOnPage(rig.app, item, dana.cookie);
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: approval, approver: 'alex', cap_cents: 2_000, scope: `payment:${pi}`, max_uses: 5 })).status).toBe(201);

    // Another proposal wins the race for the re-approval's request id between the item's check and its proposal.
    const propose = rig.queue.propose.bind(rig.queue);
    rig.queue.propose = async (proposal, options) => {
      const recorded = await propose(proposal, options);
      return { ...recorded, status: 'conflict', reason: 'the request holds another payload' } as typeof recorded;
    };
    try {
      const answer = await request(rig.app).post(`/ui/inbox/${item}/reapprove`).type('form').set('Cookie', dana.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: dana.csrf, approval, note: 'refund anyway', token: TOKENS.danaApprover, facts_shown: shown });
      expect({ status: answer.status, location: answer.headers.location ?? null }).toEqual({ status: 409, location: null });
      expect(answer.text).toContain('was recorded before with another payload');
      expect(answer.text).not.toContain('Re-approved: a new request');
    } finally {
      rig.queue.propose = propose;
    }
  });
});
