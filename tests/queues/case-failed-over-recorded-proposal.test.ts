// Rule: README "Cases": two runs of one case at once end as the journal holds it under the case's effect id: the
// first recorded proposal wins, whatever the other run decided; a declined or failed case yields to the effect the
// other run recorded; an attempt that errs after the case's proposal was recorded never fails the case. A run that
// finds the case failed with no effect (written by the other run, or before this job ran again) looks at the journal
// first: the recorded proposal makes the case proposed on it, and the case_failed item closes.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { caseEffectId } from '../../queues/decisions.js';
import { InterlockError, type Decider } from '../../src/interlock.js';
import { casesSuite } from '../support/cases-rig.js';
import { caseFailedItems, refundCase } from './case-failed-support.js';

const { rig } = casesSuite();

const refund2000: Decider = {
  name: 'rules',
  async decide() {
    return { action: 'refund' as const, amountCents: 2_000, reason: 'goodwill', model: 'scripted', text: 'refund 2000' };
  },
};

async function settled(effectId: string): Promise<void> {
  const job = await rig.decisions.queue.getJob(effectId);
  for (let i = 0; i < 100 && !(await job?.isCompleted()); i += 1) await sleep(100);
  // The completed hook (which opens a failed case's inbox item) runs after the job is completed.
  await sleep(1_000);
}

describe('a case failed with nothing proposed while its proposal is recorded', () => {
  it('ends proposed on the sent effect when the other run failed it while this run recorded and queued it', async () => {
    rig.useDecider(refund2000);
    rig.wrapSink((sink) => ({
      async propose(proposal, how) {
        const recorded = await sink.propose(proposal, how);
        const caseId = String((proposal as { request: { case_id: string } }).request.case_id);
        // The other run (it checked the journal before this record) fails the case now.
        const current = await rig.stores.cases.get(caseId);
        await rig.stores.cases.setStatus(caseId, { ...current!.status, state: 'failed', error: { code: 'decision_invalid', message: 'The model answered with no tool call. Nothing was proposed; submit the case again.' } });
        // This run's enqueue answers late: a retryable error, not its last attempt.
        if (how?.firstOnly) throw new Error('Effect was recorded, but Redis did not answer within 100 ms while it was being queued, so it may or may not be queued.');
        return recorded;
      },
    }));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    expect((await rig.decisions.submit(submission, 'sam')).status).toBe('created');
    const effectId = caseEffectId(submission.caseId);
    expect(await rig.effects.waitFor(effectId, 20_000)).toMatchObject({ outcome: 'COMMITTED' });
    expect((await rig.refundsAt(paymentIntent)).map((refund) => refund.amount)).toEqual([2_000]);
    await settled(effectId);
    expect((await rig.stores.cases.get(submission.caseId))?.status).toMatchObject({ state: 'proposed', effectId });
    expect((await caseFailedItems(rig, submission.caseId)).filter((item) => item.status === 'open')).toEqual([]);
  });

  it('a job run again for a case stored failed adopts the proposal the journal holds for it and closes its failure item', async () => {
    rig.useDecider(refund2000);
    let held: unknown = null;
    rig.wrapSink(() => ({
      async propose(proposal) {
        // This run fails before recording; the proposal is recorded below, as by another run that did.
        held = proposal;
        throw new InterlockError('decision_invalid', 'The model answered with no tool call. Nothing was proposed; submit the case again.', { retryable: false });
      },
    }));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    expect((await rig.decisions.submit(submission, 'sam')).status).toBe('created');
    const effectId = caseEffectId(submission.caseId);
    await settled(effectId);
    expect((await rig.stores.cases.get(submission.caseId))?.status).toMatchObject({ state: 'failed', effectId: null });
    expect((await caseFailedItems(rig, submission.caseId)).filter((item) => item.status === 'open')).toHaveLength(1);
    // The case's proposal is recorded and queued after all: its refund is sent.
    expect(held).not.toBeNull();
    await rig.effects.propose(held!, { firstOnly: true });
    expect(await rig.effects.waitFor(effectId, 20_000)).toMatchObject({ outcome: 'COMMITTED' });
    // The case's job runs again (a worker that died before its inbox was brought in step): the journal decides.
    rig.wrapSink(null);
    const job = await rig.decisions.queue.getJob(effectId);
    await job!.retry('completed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    await settled(effectId);
    expect((await rig.stores.cases.get(submission.caseId))?.status).toMatchObject({ state: 'proposed', effectId });
    expect((await caseFailedItems(rig, submission.caseId)).filter((item) => item.status === 'open')).toEqual([]);
    expect((await rig.refundsAt(paymentIntent)).map((refund) => refund.amount)).toEqual([2_000]);
  });
});
