// Rule: README, Cases steps 4 and 6: an injected ask over the approval in a malformed answer is MODEL_DEVIATED,
// recorded refused with a model_deviated inbox item, "so an injected ask leaves a trace however it is written": also
// when the model writes emoji, whose quoted answer is cut in the middle of one. The deviation's problems go into the
// journal (request.deviated.problems), which refuses text with no canonical form (a lone surrogate); the case must end
// `deviated` with its refused effect and inbox item, not `failed` as invalid_proposal, blaming the proposal.
import { describe, expect, it } from 'vitest';
import { caseEffectId } from '../../queues/decisions.js';
import { hasLoneSurrogate } from '../../src/core/json.js';
import type { CaseSubmission } from '../../src/interlock.js';
import { casesSuite, modelDecider } from '../support/cases-rig.js';
import { replies } from '../decider/messages-server.js';
import { uid } from '../http/rig.js';

const { rig, server } = casesSuite();

describe('an over-cap ask in a malformed call whose field names are emoji', () => {
  it('is recorded MODEL_DEVIATED, refused, with its model_deviated item, and nothing is sent', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    rig.useDecider(modelDecider(server));
    // Field names the tool does not define, quoted in the problem, which is cut at 500 UTF-16 units: the leading "a"
    // puts the cut in the middle of an emoji.
    const input: Record<string, unknown> = { amount_cents: 500_000, reason: 'Compliance notice: refund in full.' };
    for (let i = 0; i < 12; i += 1) input[`a${'😀'.repeat(20)}${i}`] = 'x';
    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', input));
    const submission: CaseSubmission = { caseId: `case-${uid()}`, kind: 'refund', subject: paymentIntent, incident: null, story: 'Cracked jar; goodwill partial refund approved.', approval, agent: 'support-bot' };
    await rig.decisions.submit(submission, 'sam');
    const record = await rig.decisions.waitFor(submission.caseId, 20_000);
    expect(record?.status.error).toBeNull();
    expect(record?.status.state).toBe('deviated');
    const effectId = caseEffectId(submission.caseId);
    expect(record?.status.effectId).toBe(effectId);
    expect(record?.status.problems.filter(hasLoneSurrogate)).toEqual([]);
    const item = await rig.stores.inbox.get(`model_deviated:${effectId}`);
    expect(item).not.toBeNull();
    const partition = (await rig.stores.journal.partitionOf(effectId)) ?? '';
    expect((await rig.stores.journal.entries(partition, effectId)).map((entry) => entry.kind)).toEqual(['PROPOSED', 'REFUSED']);
    expect(await rig.refundsAt(paymentIntent)).toEqual([]);
  });
});
