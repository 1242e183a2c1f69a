// Rule: a case whose every decision attempt failed on an error from outside the project (Redis not answering while
// the proposal was recorded), and that proposed nothing, is not failed for good: it fails as decision_interrupted
// (retryable, saying nothing was proposed) and the same case submitted again once Redis answers is decided.
import { describe, expect, it } from 'vitest';
import { caseEffectId } from '../../queues/decisions.js';
import type { CaseSubmission } from '../../src/interlock.js';
import { casesSuite } from '../support/cases-rig.js';
import { uid } from '../http/rig.js';

const { rig } = casesSuite();

describe('a case whose every attempt met Redis not answering', () => {
  it('is decided when submitted again once Redis answers, as nothing was proposed', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission: CaseSubmission = { caseId: `case-${uid()}`, kind: 'refund', subject: paymentIntent, incident: null, story: 'Cracked jar; support approved a $20 goodwill refund.', approval, agent: 'support-bot' };
    let down = true;
    rig.wrapSink((sink) => ({
      async propose(proposal, how) {
        // What ioredis raises while Redis does not answer (boundedWaits' command timeout); nothing was recorded.
        if (down) throw new Error('Command timed out');
        return sink.propose(proposal, how);
      },
    }));
    expect((await rig.decisions.submit(submission, 'sam')).status).toBe('created');
    const failed = await rig.decisions.waitFor(submission.caseId, 15_000);
    expect(failed?.status).toMatchObject({ state: 'failed', effectId: null, attempts: 3, error: { code: 'decision_interrupted' } });
    expect(failed?.status.error?.message).toContain('nothing was proposed; submit the case again');
    expect(await rig.stores.journal.partitionOf(caseEffectId(submission.caseId))).toBeNull();

    // Redis answers again; the same case, the same payload, is submitted again.
    down = false;
    const again = await rig.decisions.submit(submission, 'sam');
    expect(again.record.status.state).toBe('queued');
    const decided = await rig.decisions.waitFor(submission.caseId, 15_000);
    expect(decided?.status).toMatchObject({ state: 'proposed', decision: { amountCents: 2_000 } });
  });
});
