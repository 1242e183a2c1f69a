// Rule: a case under an approval that is no longer live (revoked or expired) is never decided into money the gate can
// only refuse. The API refuses a new case under it (409 approval_not_live, saying who revoked it or when it expired,
// nothing stored, the case id still free); a case stored before the approval ended (or queued by `interlock case`) is
// declined by the worker before any decider (a paid model call) is asked, saying to grant a new approval and submit a
// new case id; and a proposed case whose effect the gate refused under its approval (REFUSED:lease) says its case id
// is spent and to submit again under a new one. Before, the API answered 202, the decider was asked, and the case
// ended proposed with REFUSED:lease and only the generic outcome sentence.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { caseSubmissionOf, type Decider } from '../../src/interlock.js';
import { casesSuite, rulesDecider } from '../support/cases-rig.js';
import { bearer, caseBody, TOKENS } from './rig.js';

const { rig } = casesSuite();
const post = (body: Record<string, unknown>, query = '') => request(rig.app).post(`/v1/cases${query}`).set(bearer(TOKENS.support)).send(body);
const show = (caseId: unknown) => request(rig.app).get(`/v1/cases/${String(caseId)}`).set(bearer(TOKENS.auditor));

/** The rules decider, counting the cases it is asked to decide. */
function counting(): { decider: Decider; calls: () => number } {
  let calls = 0;
  const inner = rulesDecider();
  return {
    decider: {
      name: 'rules',
      decide: (input, options) => {
        calls += 1;
        return inner.decide(input, options);
      },
    },
    calls: () => calls,
  };
}

describe('a new case under an approval that is not live', () => {
  it('is refused 409 approval_not_live when the approval was revoked, naming who revoked it; nothing is stored or decided', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    await rig.stores.approvals.revoke(approval, 'lee');
    const spy = counting();
    rig.useDecider(spy.decider);
    const body = caseBody({ payment_intent: paymentIntent, approval });
    const answer = await post(body, '?wait=5');
    expect(answer.status, JSON.stringify(answer.body)).toBe(409);
    expect(answer.body.error.code).toBe('approval_not_live');
    expect(answer.body.error.message).toMatch(new RegExp(`Approval ${approval} was revoked by lee at \\d{4}-`));
    expect(answer.body.error.message).toMatch(/nothing was recorded/i);
    expect(answer.body.error.message).toMatch(/grant a new approval/i);
    expect(answer.body.error.fields).toEqual([{ path: 'approval', message: expect.stringContaining('revoked by lee') }]);
    expect((await show(body.case_id)).status).toBe(404);
    expect(spy.calls()).toBe(0);
  });

  it('is refused 409 approval_not_live when the approval expired, naming when', async () => {
    const { paymentIntent } = await rig.paymentWithApproval(2_000);
    const approval = `ap_expired_${Date.now()}`;
    const expiresAt = Date.now() - 60_000;
    await rig.stores.approvals.grant({ id: approval, approver: 'lead', capCents: 2_000, scope: `payment:${paymentIntent}`, expiresAt, maxUses: 1 });
    const body = caseBody({ payment_intent: paymentIntent, approval });
    const answer = await post(body);
    expect(answer.status, JSON.stringify(answer.body)).toBe(409);
    expect(answer.body.error.code).toBe('approval_not_live');
    expect(answer.body.error.message).toContain(`Approval ${approval} expired at ${new Date(expiresAt).toISOString()}`);
    expect((await show(body.case_id)).status).toBe(404);
  });
});

describe('a stored case whose approval stopped being live before it was decided', () => {
  it('is declined by the worker without asking the decider, saying to grant a new approval and use a new case id', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    await rig.stores.approvals.revoke(approval, 'lee');
    const spy = counting();
    rig.useDecider(spy.decider);
    // Stored and queued as `interlock case` does (no liveness check there), or as a case stored before the revoke.
    const submission = caseSubmissionOf({ caseId: `case-dead-${Date.now()}`, paymentIntent, story: 'The jar arrived cracked; support approved a goodwill refund.', approval, agent: 'cli' });
    await rig.decisions.submit(submission, 'cli');
    await rig.decisions.waitFor(submission.caseId, 20_000);
    const answer = await show(submission.caseId);
    expect(answer.body).toMatchObject({ state: 'declined', outcome: 'DECLINED', effect: null, decision: { model: 'rules', action: 'decline', amount_cents: null } });
    expect(spy.calls(), 'the decider was asked to decide a case under a revoked approval').toBe(0);
    expect(answer.body.sentence).toMatch(new RegExp(`^Declined: Approval ${approval} was revoked by lee at `));
    expect(answer.body.sentence).toMatch(/grants a new approval/);
    expect(answer.body.sentence).toMatch(/new case id/);
    expect(await rig.refundsAt(paymentIntent)).toEqual([]);
  });

  it('a case decided before its approval was revoked is answered as it stands when submitted again, not refused', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const body = caseBody({ payment_intent: paymentIntent, approval });
    const first = await post(body, '?wait=20');
    expect(first.status).toBe(202);
    expect(first.body.outcome).toBe('COMMITTED');
    await rig.stores.approvals.revoke(approval, 'lee');
    const again = await post(body);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ state: 'proposed', outcome: 'COMMITTED' });
  });
});

describe('a proposed case the gate refused under its approval', () => {
  it('says its case id is spent and to submit again under a new one', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    // Revoked after the decision, before the dispatch: the gate refuses the effect (REFUSED:lease).
    rig.wrapSink((sink) => ({
      propose: async (proposal, how) => {
        await rig.stores.approvals.revoke(approval, 'lee');
        return sink.propose(proposal, how);
      },
    }));
    const body = caseBody({ payment_intent: paymentIntent, approval });
    const answer = await post(body, '?wait=20');
    expect(answer.body).toMatchObject({ state: 'proposed', outcome: 'REFUSED:lease' });
    expect(answer.body.sentence).toContain(`Case ${String(body.case_id)} is spent: submitted again it is answered as it stands.`);
    expect(answer.body.sentence).toMatch(/new approval/);
    expect(answer.body.sentence).toMatch(/under a new case id/);
    expect(await rig.refundsAt(paymentIntent)).toEqual([]);
  });
});
