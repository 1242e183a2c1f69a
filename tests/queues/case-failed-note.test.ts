// Rule: the cases' outbox note of a failed case is what brings a failure whose item the worker could not open (Redis
// failed, the process stopped after the job completed) back to the sweep, so nothing drops it before the item is open:
// the same case submitted again (a support tool retrying its POST), or another payload under its id, opens the item
// first and only then drops the note; when the item still cannot be opened, the note stays and the sweep opens it.
import { describe, expect, it, vi } from 'vitest';
import { caseFailureItemId, type CaseRecord, type CaseSubmission, type InboxItemDraft } from '../../src/interlock.js';
import { casesSuite } from '../support/cases-rig.js';
import { caseFailedItems, refundCase } from './case-failed-support.js';
import { uid } from '../http/rig.js';

const { rig } = casesSuite();

type Open = (draft: InboxItemDraft) => ReturnType<typeof rig.stores.inbox.openCaseFailure>;

/** inbox.openCaseFailure refusing as Redis does when it is gone, until `restore`. */
function refuseOpenings(): { calls: InboxItemDraft[]; restore: () => void } {
  const inbox = rig.stores.inbox as { openCaseFailure: Open };
  const real = inbox.openCaseFailure.bind(inbox);
  const calls: InboxItemDraft[] = [];
  inbox.openCaseFailure = async (draft) => {
    calls.push(draft);
    throw new Error('Connection is closed.');
  };
  return { calls, restore: () => (inbox.openCaseFailure = real) };
}

const unqueued = () => rig.stores.cases.unqueued(Number.MAX_SAFE_INTEGER, 10_000);

/** A case that fails for good (its approval is unknown), its worker's hook unable to open its item: its note kept. */
async function failedWithoutItem(): Promise<{ submission: CaseSubmission; record: CaseRecord; refusing: ReturnType<typeof refuseOpenings> }> {
  const { paymentIntent } = await rig.paymentWithApproval(2_000);
  const submission = refundCase(paymentIntent, `ap_${uid()}`);
  const refusing = refuseOpenings();
  expect((await rig.decisions.submit(submission, 'sam')).status).toBe('created');
  const record = await rig.decisions.waitFor(submission.caseId, 15_000);
  expect(record?.status).toMatchObject({ state: 'failed', error: { code: 'unknown_approval' } });
  await vi.waitFor(() => expect(refusing.calls.length).toBeGreaterThan(0), { timeout: 5_000, interval: 20 });
  expect(await unqueued()).toContain(submission.caseId);
  expect(await caseFailedItems(rig, submission.caseId)).toEqual([]);
  if (record === null) throw new Error('the case is not stored');
  return { submission, record, refusing };
}

describe("a failed case's outbox note", () => {
  it('the same case submitted again opens the item its worker could not, then drops the note', async () => {
    const { submission, record, refusing } = await failedWithoutItem();
    refusing.restore();
    expect((await rig.decisions.submit(submission, 'sam')).record.status.state).toBe('failed');
    expect((await caseFailedItems(rig, submission.caseId)).map((item) => [item.id, item.status])).toEqual([[caseFailureItemId(submission.caseId, record.status.updatedAt), 'open']]);
    expect(await unqueued()).not.toContain(submission.caseId);
  });

  it('another payload under its id does the same', async () => {
    const { submission, record, refusing } = await failedWithoutItem();
    refusing.restore();
    expect((await rig.decisions.submit({ ...submission, story: 'Another story under the same case id.' }, 'sam')).status).toBe('conflict');
    expect((await caseFailedItems(rig, submission.caseId)).map((item) => [item.id, item.status])).toEqual([[caseFailureItemId(submission.caseId, record.status.updatedAt), 'open']]);
    expect(await unqueued()).not.toContain(submission.caseId);
  });

  it('submitted again while the item still cannot be opened, the note stays and the sweep opens the item', async () => {
    const { submission, record, refusing } = await failedWithoutItem();
    try {
      expect((await rig.decisions.submit(submission, 'sam')).record.status.state).toBe('failed');
      expect(await unqueued()).toContain(submission.caseId);
    } finally {
      refusing.restore();
    }
    const swept = await rig.decisions.requeueUnqueued(0);
    expect(swept.dropped).toContain(submission.caseId);
    expect((await caseFailedItems(rig, submission.caseId)).map((item) => [item.id, item.status])).toEqual([[caseFailureItemId(submission.caseId, record.status.updatedAt), 'open']]);
    expect(await unqueued()).not.toContain(submission.caseId);
  });
});
