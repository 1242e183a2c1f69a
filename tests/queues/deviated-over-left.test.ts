// Rule: a MODEL_DEVIATED item over what was left (the subject's cap, effects under the approval, its uses) says so:
// beside the approval's cap (approved_cents) it records what the decider was told is left (left_cents) and what held
// it (left_by), on the API and the page, so an ask under the cap reads as the deviation it is; the recorded refusal
// keeps them too, so an item opened again from it says the same.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { caseEffectId } from '../../queues/decisions.js';
import type { CaseSubmission } from '../../src/interlock.js';
import { inboxItemPage } from '../../webhooks/ui/inbox-pages.js';
import { casesSuite } from '../support/cases-rig.js';
import { bearer, TOKENS, uid } from '../http/rig.js';

const { rig } = casesSuite();

describe('a deviation over what was left of the approval', () => {
  it("records the cap and what the decider was told is left, and the page says what held it", async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    await rig.stores.approvals.setSubjectCap(`payment:${paymentIntent}`, 500);
    let told: unknown = null;
    rig.useDecider({
      name: 'anthropic',
      decide: async (input) => {
        told = input.approval.centsLeft;
        return { action: 'refund', amountCents: 800, reason: 'the jar', model: 'scripted', text: 'refund 800' };
      },
    });
    const submission: CaseSubmission = { caseId: `case-${uid()}`, kind: 'refund', subject: paymentIntent, incident: null, story: 'Cracked jar; goodwill partial refund approved.', approval, agent: 'support-bot' };
    await rig.decisions.submit(submission, 'sam');
    const record = await rig.decisions.waitFor(submission.caseId, 15_000);
    expect(told).toBe(500);
    expect(record?.status.state).toBe('deviated');

    const effectId = caseEffectId(submission.caseId);
    const shown = await request(rig.app).get(`/v1/inbox/model_deviated:${effectId}`).set(bearer(TOKENS.auditor));
    expect(shown.status).toBe(200);
    expect(shown.body.detail).toMatchObject({ decided_cents: 800, approved_cents: 2_000, left_cents: 500, left_by: 'subject_cap' });
    const partition = (await rig.stores.journal.partitionOf(effectId)) ?? '';
    const proposed = (await rig.stores.journal.entries(partition, effectId)).find((entry) => entry.kind === 'PROPOSED');
    expect(proposed?.kind === 'PROPOSED' ? proposed.request : null).toMatchObject({ deviated: { approved_cents: 2_000, left_cents: 500, left_by: 'subject_cap' } });

    const item = await rig.stores.inbox.get(`model_deviated:${effectId}`);
    if (item === null) throw new Error('no model_deviated item');
    const page = inboxItemPage({ viewer: { name: 'alex', role: 'approver', csrf: 'token', sections: [] }, item, canAct: true, canOpenEffects: true, notice: null, error: null }).text;
    expect(page).toContain("<dt>Asked against</dt><dd>The model asked $8.00; the approval's cap is $20.00, of which the decider was told $5.00 was left (the cap set on the subject holds it).</dd>");
  });
});
