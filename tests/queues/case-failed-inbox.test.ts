// Rule: a case the decisions worker writes failed (nothing proposed, no effect recorded) opens one case_failed inbox
// item naming the case, its error code and what to do; meeting the same failure again (its job run again, the cases'
// outbox sweep after a worker stopped before opening it) opens no second; a person's dismissal closes it in the inbox index with who, why and when; a case submitted again that fails
// again opens a new item (an earlier one still open is closed as superseded), and one that is then decided closes the
// open one. A model_deviated item is opened as before, and a failed case records nothing under its request id. The
// page's dismissal of one says the inbox keeps it (there is no receipt).
import { Redis } from 'ioredis';
import request from 'supertest';
import { describe, expect, it, vi } from 'vitest';
import { caseEffectId } from '../../queues/decisions.js';
import { caseFailureItem, caseFailureItemId, type CaseRecord } from '../../src/interlock.js';
import { casesSuite, rulesDecider } from '../support/cases-rig.js';
import { caseFailedItems, noDecision, refundCase } from './case-failed-support.js';
import { signIn } from '../http/page-sessions.js';
import { bearer, TOKENS, uid } from '../http/rig.js';

const { rig } = casesSuite();

/** The case once final, and its failure's item once the worker opened it (it does so right after writing the case). */
async function settled(caseId: string, failures: number): Promise<CaseRecord> {
  const record = await rig.decisions.waitFor(caseId, 15_000);
  if (record === null) throw new Error('the case is not stored');
  await vi.waitFor(async () => expect(await caseFailedItems(rig, caseId)).toHaveLength(failures), { timeout: 5_000, interval: 20 });
  return record;
}

async function jobRunAgain(caseId: string): Promise<void> {
  const job = await rig.decisions.queue.getJob(caseEffectId(caseId));
  if (job === undefined) throw new Error('no job for the case');
  await vi.waitFor(async () => expect(await job.getState()).toBe('completed'), { timeout: 5_000, interval: 20 });
  const before = (await rig.decisions.queue.getJob(job.id ?? ''))?.finishedOn ?? 0;
  await job.retry('completed');
  await vi.waitFor(
    async () => {
      const again = await rig.decisions.queue.getJob(job.id ?? '');
      expect(await again?.getState()).toBe('completed');
      expect(again?.finishedOn ?? 0).toBeGreaterThan(before);
    },
    { timeout: 10_000, interval: 20 },
  );
}

describe('a failed case in the escalation inbox', () => {
  it('opens one item naming the case and its code, says to submit it under a new case id, and a retry of the same failure opens no second', async () => {
    const { paymentIntent } = await rig.paymentWithApproval(2_000);
    // The approval is gone by the time the worker decides: unknown_approval, not a failure that passes.
    const submission = refundCase(paymentIntent, `ap_${uid()}`);
    expect((await rig.decisions.submit(submission, 'sam')).status).toBe('created');
    const record = await settled(submission.caseId, 1);
    expect(record.status).toMatchObject({ state: 'failed', effectId: null, error: { code: 'unknown_approval' } });
    const id = caseFailureItemId(submission.caseId, record.status.updatedAt);
    const item = await rig.stores.inbox.get(id);
    expect(item).toMatchObject({
      id,
      kind: 'case_failed',
      status: 'open',
      subject: `payment:${paymentIntent}`,
      centsAtStake: 0,
      actions: ['dismiss'],
      detail: { case_id: submission.caseId, code: 'unknown_approval', message: record.status.error?.message, approval: submission.approval, resubmit: 'new_case_id' },
    });
    expect(item?.happened).toContain(`Case ${submission.caseId} failed (unknown_approval)`);
    expect(String(item?.detail?.['what_to_do'])).toContain(`Grant an approval that covers payment:${paymentIntent}`);
    // Nothing is recorded under the case's request id: the case may still be submitted (under a new id) and decided.
    expect(await rig.stores.journal.partitionOf(caseEffectId(submission.caseId))).toBeNull();

    // Submitted again, it stays failed (its code does not pass) and opens nothing.
    expect(await rig.decisions.submit(submission, 'sam')).toMatchObject({ status: 'exists', record: { status: { state: 'failed', updatedAt: record.status.updatedAt } } });
    // A worker that stopped after writing the case failed and before opening its item left the case's outbox note:
    // the sweep opens the item (the same one) and drops the note. (The worker's own hook dropped the note once it had
    // opened the item: waited for, so the hook is done before the item is taken away.)
    const unqueued = () => rig.stores.cases.unqueued(Number.MAX_SAFE_INTEGER, 10_000);
    await vi.waitFor(async () => expect(await unqueued()).not.toContain(submission.caseId), { timeout: 5_000, interval: 20 });
    const redis = new Redis(rig.stores.config.redisUrl);
    await redis.hdel(rig.stores.keys.inbox, id);
    await redis.zrem(rig.stores.keys.inboxOpen, id);
    await redis.zadd(rig.stores.keys.casesUnqueued, 1, submission.caseId);
    await redis.quit();
    expect(await rig.stores.inbox.get(id)).toBeNull();
    const swept = await rig.decisions.requeueUnqueued();
    expect(swept.dropped).toContain(submission.caseId);
    expect(swept.failed).toEqual([]);
    expect((await caseFailedItems(rig, submission.caseId)).map((found) => [found.id, found.status])).toEqual([[id, 'open']]);
    expect(await unqueued()).not.toContain(submission.caseId);

    // Its job run again (the same failure met again): no second item; the same failure opened again is the same item.
    await jobRunAgain(submission.caseId);
    await jobRunAgain(submission.caseId);
    const again = caseFailureItem({ caseId: submission.caseId, subject: `payment:${paymentIntent}`, approval: submission.approval, code: 'unknown_approval', message: record.status.error?.message ?? '', failedAt: record.status.updatedAt, attempts: record.status.attempts });
    expect(await rig.stores.inbox.openCaseFailure(again)).toMatchObject({ created: false, superseded: [], item: { id, status: 'open' } });
    expect((await caseFailedItems(rig, submission.caseId)).map((found) => [found.id, found.status])).toEqual([[id, 'open']]);

    // Dismissed on the page: the notice says where the dismissal is kept, not that a receipt holds it.
    const approver = await signIn(rig.app, TOKENS.approver);
    const posted = await request(rig.app).post(`/ui/inbox/${id}/dismiss`).type('form').set('Cookie', approver.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: approver.csrf, note: 'Filed again as a new case.', token: TOKENS.approver });
    expect(posted.status).toBe(303);
    const after = await request(rig.app).get(String(posted.headers['location'])).set('Cookie', approver.cookie);
    expect(after.text).toContain('Dismissed. The inbox keeps who dismissed it, when and why (a failed case has no effect, so no receipt).');
    expect((await rig.stores.inbox.get(id))?.closure).toMatchObject({ action: 'dismiss', by: { name: 'alex', role: 'approver' }, note: 'Filed again as a new case.' });
  });

  it('is dismissed by a person through the API, closed in the index with who, why and when; a second action is refused naming them', async () => {
    const { paymentIntent } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, `ap_${uid()}`);
    await rig.decisions.submit(submission, 'sam');
    const record = await settled(submission.caseId, 1);
    const id = caseFailureItemId(submission.caseId, record.status.updatedAt);

    // Support, which may not read the inbox, is given no link to it; an auditor is.
    const caseAnswer = await request(rig.app).get(`/v1/cases/${submission.caseId}`).set(bearer(TOKENS.support));
    expect(caseAnswer.body).toMatchObject({ state: 'failed', outcome: 'unknown_approval', links: { inbox: null } });
    const audited = await request(rig.app).get(`/v1/cases/${submission.caseId}`).set(bearer(TOKENS.auditor));
    expect(audited.body).toMatchObject({ links: { inbox: `/v1/inbox/${id}` } });
    const listed = await request(rig.app).get('/v1/inbox').query({ kind: 'case_failed', effect: caseEffectId(submission.caseId) }).set(bearer(TOKENS.auditor));
    expect(listed.status).toBe(200);
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.data[0]).toMatchObject({ id, kind: 'case_failed', status: 'open', actions: ['dismiss'], detail: { case_id: submission.caseId, code: 'unknown_approval' }, links: { self: `/v1/inbox/${id}`, effect: null, receipt: null, case: `/v1/cases/${submission.caseId}` } });

    const refused = await request(rig.app).post(`/v1/inbox/${id}/reapprove`).set(bearer(TOKENS.approver)).send({ approval: `ap_${uid()}` });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'action_not_allowed' });

    const dismissed = await request(rig.app).post(`/v1/inbox/${id}/dismiss`).set(bearer(TOKENS.approver)).send({ note: 'Granted ap_new and resubmitted as a new case.' });
    expect(dismissed.status).toBe(200);
    expect(dismissed.body).toMatchObject({ id, status: 'closed', closed: { action: 'dismiss', by: { name: 'alex', role: 'approver' }, note: 'Granted ap_new and resubmitted as a new case.', resolution: null, reapproval: null } });
    expect(Date.parse(dismissed.body.closed.at)).toBeGreaterThan(record.status.updatedAt - 60_000);
    const shown = await request(rig.app).get(`/v1/inbox/${id}`).set(bearer(TOKENS.auditor));
    expect(shown.body).toMatchObject({ status: 'closed', closed: { by: { name: 'alex' }, note: 'Granted ap_new and resubmitted as a new case.' } });

    const second = await request(rig.app).post(`/v1/inbox/${id}/dismiss`).set(bearer(TOKENS.danaApprover)).send({ note: 'me too' });
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('inbox_item_closed');
    expect(second.body.error.message).toContain('alex (approver) dismissed it');
    expect((await rig.stores.inbox.get(id))?.closure).toMatchObject({ by: { name: 'alex' }, note: 'Granted ap_new and resubmitted as a new case.' });
    expect(await rig.stores.journal.partitionOf(caseEffectId(submission.caseId))).toBeNull();
  });

  it('a case submitted again that fails again opens a new item; once decided, its open item is closed and a dismissed one stays as the person left it', async () => {
    rig.useDecider(noDecision);
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    await rig.decisions.submit(submission, 'sam');
    const first = await settled(submission.caseId, 1);
    expect(first.status).toMatchObject({ state: 'failed', error: { code: 'decision_invalid' } });
    const firstId = caseFailureItemId(submission.caseId, first.status.updatedAt);
    expect((await rig.stores.inbox.get(firstId))?.detail).toMatchObject({ resubmit: 'same_case_id' });
    expect(String((await rig.stores.inbox.get(firstId))?.detail?.['what_to_do'])).toContain(`submit case ${submission.caseId} again under the same id and payload`);
    await rig.stores.inbox.act(firstId, { action: 'dismiss', by: { name: 'lee', role: 'cli' }, note: 'asked the model again' });

    // Failed again: a new item, open; the dismissed one stays the person's.
    expect((await rig.decisions.submit(submission, 'sam')).record.status.state).toBe('queued');
    const second = await settled(submission.caseId, 2);
    const secondId = caseFailureItemId(submission.caseId, second.status.updatedAt);
    expect(secondId).not.toBe(firstId);
    expect(await rig.stores.inbox.get(secondId)).toMatchObject({ status: 'open', detail: { code: 'decision_invalid' } });
    expect((await rig.stores.inbox.get(firstId))?.closure).toMatchObject({ by: { name: 'lee', role: 'cli' }, note: 'asked the model again' });

    // Failed a third time while the second's item is open: the third's opens, the second's closes as superseded.
    await rig.decisions.submit(submission, 'sam');
    const third = await settled(submission.caseId, 3);
    const thirdId = caseFailureItemId(submission.caseId, third.status.updatedAt);
    expect(await rig.stores.inbox.get(thirdId)).toMatchObject({ status: 'open' });
    expect((await rig.stores.inbox.get(secondId))?.closure).toMatchObject({ action: 'dismiss', by: { name: 'decisions', role: 'worker' }, note: `The case failed again; item ${thirdId} stands for its latest failure.` });

    // Submitted again and decided (the rules decider proposes it): the open item closes, saying how.
    rig.useDecider(rulesDecider());
    await rig.decisions.submit(submission, 'sam');
    const decided = await rig.decisions.waitFor(submission.caseId, 15_000);
    expect(decided?.status).toMatchObject({ state: 'proposed', error: null });
    await vi.waitFor(async () => expect((await rig.stores.inbox.get(thirdId))?.status).toBe('closed'), { timeout: 5_000, interval: 20 });
    expect((await rig.stores.inbox.get(thirdId))?.closure).toMatchObject({ by: { name: 'decisions', role: 'worker' }, note: `Case ${submission.caseId} was decided after this failure: proposed as effect ${decided?.status.effectId}.` });
    expect((await rig.stores.inbox.get(firstId))?.closure).toMatchObject({ by: { name: 'lee' } });
    expect((await caseFailedItems(rig, submission.caseId)).every((found) => found.status === 'closed')).toBe(true);
    const view = await request(rig.app).get(`/v1/cases/${submission.caseId}`).set(bearer(TOKENS.support));
    expect(view.body.links.inbox).toBeNull();
  });

  it('a MODEL_DEVIATED case opens its model_deviated item as before, with its effect and receipt, and no case_failed item', async () => {
    rig.useDecider({ name: 'anthropic', decide: async () => ({ action: 'refund', amountCents: 3_000, reason: 'more', model: 'scripted', text: 'refund 3000' }) });
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    await rig.decisions.submit(submission, 'sam');
    const record = await rig.decisions.waitFor(submission.caseId, 15_000);
    const effectId = caseEffectId(submission.caseId);
    expect(record?.status).toMatchObject({ state: 'deviated', effectId });
    const shown = await request(rig.app).get(`/v1/inbox/model_deviated:${effectId}`).set(bearer(TOKENS.auditor));
    expect(shown.status).toBe(200);
    expect(Object.keys(shown.body)).toEqual(['object', 'id', 'kind', 'effect_id', 'subject', 'outcome', 'happened', 'cents_at_stake', 'currency', 'changes', 'actions', 'facts_shown', 'detail', 'status', 'opened_at', 'closed', 'links']);
    expect(shown.body).toMatchObject({ kind: 'model_deviated', effect_id: effectId, subject: `payment:${paymentIntent}`, outcome: 'REFUSED:lease', cents_at_stake: 3_000, actions: ['reapprove', 'dismiss'], status: 'open', closed: null });
    expect(shown.body.links).toEqual({ self: `/v1/inbox/model_deviated:${effectId}`, effect: `/v1/effects/${effectId}`, receipt: `/v1/effects/${effectId}/receipt` });
    const view = await request(rig.app).get(`/v1/cases/${submission.caseId}`).set(bearer(TOKENS.auditor));
    expect(view.body.links.inbox).toBe(`/v1/inbox/model_deviated:${effectId}`);
    expect(await caseFailedItems(rig, submission.caseId)).toEqual([]);
  });
});
