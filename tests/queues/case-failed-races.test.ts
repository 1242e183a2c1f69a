// Rule: whatever the order in which a failed case's item is opened and the case is submitted again, decided or failed
// again, at rest a decided case has no open case_failed item and a failed case has exactly its latest failure's item
// open: an item opened late (the worker's hook slowed after reading the case) is closed once the case reads decided or
// failed again; a late item never supersedes a newer failure's; and a run that read the case before another run
// failed it, then wrote it proposed, closes that failure's item. Slowness is injected by wrapping store methods.
import { describe, expect, it, vi } from 'vitest';
import { caseFailureItem, caseFailureItemId, caseScope, type InboxItemDraft } from '../../src/interlock.js';
import { casesSuite, rulesDecider } from '../support/cases-rig.js';
import { caseFailedItems, noDecision, refundCase } from './case-failed-support.js';

const { rig } = casesSuite();

type Open = (draft: InboxItemDraft) => ReturnType<typeof rig.stores.inbox.openCaseFailure>;

/**
 * Holds inbox.openCaseFailure, as the worker's hook and the sweep call it, for the openings `held` picks (by their
 * order, from 1), until `release`: the opener has read the case failed and is on its way to open the item.
 */
function holdOpenings(held: (call: number) => boolean): { calls: InboxItemDraft[]; release: () => void; restore: () => void } {
  const inbox = rig.stores.inbox as { openCaseFailure: Open };
  const real = inbox.openCaseFailure.bind(inbox);
  const calls: InboxItemDraft[] = [];
  let release = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  inbox.openCaseFailure = async (draft) => {
    calls.push(draft);
    if (held(calls.length)) await gate;
    return real(draft);
  };
  return { calls, release: () => release(), restore: () => (inbox.openCaseFailure = real) };
}

const unqueued = () => rig.stores.cases.unqueued(Number.MAX_SAFE_INTEGER, 10_000);

describe('a failed case whose item is opened while the case moves on', () => {
  it('the item of a failure opened after the case, submitted again, was decided is closed, saying how it was decided', async () => {
    rig.useDecider(noDecision);
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    const openings = holdOpenings(() => true);
    let failedAt: number | undefined;
    try {
      await rig.decisions.submit(submission, 'sam');
      const failed = await rig.decisions.waitFor(submission.caseId, 15_000);
      failedAt = failed?.status.updatedAt;
      expect(failed?.status).toMatchObject({ state: 'failed', error: { code: 'decision_invalid' } });
      await vi.waitFor(() => expect(openings.calls).toHaveLength(1), { timeout: 5_000, interval: 20 });
      // Submitted again as its error says, and decided: the run that decided it found no item open to close.
      rig.useDecider(rulesDecider());
      expect((await rig.decisions.submit(submission, 'sam')).record.status.state).toBe('queued');
      await vi.waitFor(async () => expect((await rig.stores.cases.get(submission.caseId))?.status.state).toBe('proposed'), { timeout: 15_000, interval: 20 });
      // The run dropped the case's note once it had looked for the case's open items: it is done with them.
      await vi.waitFor(async () => expect(await unqueued()).not.toContain(submission.caseId), { timeout: 5_000, interval: 20 });
      expect(await caseFailedItems(rig, submission.caseId)).toEqual([]);
      openings.release();
      await vi.waitFor(async () => expect(await caseFailedItems(rig, submission.caseId)).toHaveLength(1), { timeout: 5_000, interval: 20 });
      await vi.waitFor(async () => expect((await caseFailedItems(rig, submission.caseId))[0]?.status).toBe('closed'), { timeout: 5_000, interval: 20 });
    } finally {
      openings.release();
      openings.restore();
    }
    const decided = await rig.stores.cases.get(submission.caseId);
    expect(decided?.status.state).toBe('proposed');
    const [item] = await caseFailedItems(rig, submission.caseId);
    expect(item).toMatchObject({ id: caseFailureItemId(submission.caseId, failedAt ?? 0), status: 'closed' });
    expect(item?.closure).toMatchObject({ action: 'dismiss', by: { name: 'decisions', role: 'worker' }, note: `Case ${submission.caseId} was decided after this failure: proposed as effect ${decided?.status.effectId}.` });
  });

  it("the first failure's item, opened after the case failed again, never supersedes the latest failure's: it is closed, the latest stays open", async () => {
    rig.useDecider(noDecision);
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    const openings = holdOpenings((call) => call === 1);
    let firstId = '';
    let secondId = '';
    try {
      await rig.decisions.submit(submission, 'sam');
      const first = await rig.decisions.waitFor(submission.caseId, 15_000);
      firstId = caseFailureItemId(submission.caseId, first?.status.updatedAt ?? 0);
      await vi.waitFor(() => expect(openings.calls).toHaveLength(1), { timeout: 5_000, interval: 20 });
      expect((await rig.decisions.submit(submission, 'sam')).record.status.state).toBe('queued');
      await vi.waitFor(
        async () => {
          const now = await rig.stores.cases.get(submission.caseId);
          expect(now?.status.state).toBe('failed');
          expect(now?.status.updatedAt).not.toBe(first?.status.updatedAt);
        },
        { timeout: 15_000, interval: 20 },
      );
      const second = await rig.stores.cases.get(submission.caseId);
      secondId = caseFailureItemId(submission.caseId, second?.status.updatedAt ?? 0);
      await vi.waitFor(async () => expect((await rig.stores.inbox.get(secondId))?.status).toBe('open'), { timeout: 5_000, interval: 20 });
      openings.release();
      await vi.waitFor(async () => expect((await rig.stores.inbox.get(firstId))?.status).toBe('closed'), { timeout: 5_000, interval: 20 });
    } finally {
      openings.release();
      openings.restore();
    }
    const items = await caseFailedItems(rig, submission.caseId);
    expect(items.filter((item) => item.status === 'open').map((item) => item.id)).toEqual([secondId]);
    expect((await rig.stores.inbox.get(firstId))?.closure).toMatchObject({ by: { name: 'decisions', role: 'worker' }, note: `The case failed again; item ${secondId} stands for its latest failure.` });
  });

  it('a run that read the case before another run failed it and then proposed it closes that failure\'s item', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    const rules = rulesDecider();
    let failedAt = 0;
    // While this run asks the decider, another run of the case (its job handed to a second worker) writes it failed,
    // and that run's hook opens the failure's item.
    rig.useDecider({
      name: rules.name,
      decide: async (input, options) => {
        const written = await rig.stores.cases.setStatus(input.caseId, { state: 'failed', decision: null, effectId: null, problems: [], error: { code: 'decision_interrupted', message: 'the other run failed it (nothing was proposed; submit the case again to decide it)' }, attempts: 1 });
        failedAt = written.record.status.updatedAt;
        const { status } = written.record;
        await rig.stores.inbox.openCaseFailure(caseFailureItem({ caseId: input.caseId, subject: caseScope(submission), approval, code: 'decision_interrupted', message: status.error?.message ?? '', failedAt, attempts: status.attempts }));
        return rules.decide(input, options);
      },
    });
    await rig.decisions.submit(submission, 'sam');
    await vi.waitFor(async () => expect((await rig.stores.cases.get(submission.caseId))?.status.state).toBe('proposed'), { timeout: 15_000, interval: 20 });
    const id = caseFailureItemId(submission.caseId, failedAt);
    await vi.waitFor(async () => expect((await rig.stores.inbox.get(id))?.status).toBe('closed'), { timeout: 5_000, interval: 20 });
    const decided = await rig.stores.cases.get(submission.caseId);
    expect((await rig.stores.inbox.get(id))?.closure).toMatchObject({ by: { name: 'decisions', role: 'worker' }, note: `Case ${submission.caseId} was decided after this failure: proposed as effect ${decided?.status.effectId}.` });
  });
});
