// Rule: a stored case is decided (or fails, which is final and said) whatever happens to its job: its note in the
// cases' outbox stays until the case is final, so a case whose decisions job was removed (BullMQ's API, its queue's
// keys deleted) before it decided the case is queued again by the next sweep once CASE_OUTBOX_GRACE_MS has passed.
// While a job stands for the case the sweep leaves it to that job and times the note again (looked at once per grace);
// the worker drops the note once a run leaves the case final.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CASE_OUTBOX_GRACE_MS, caseEffectId, createDecisionsQueue, startDecisionsWorker, type DecisionsQueue } from '../../queues/decisions.js';
import { CREDIT_FACTS, openStores, REFUND_FACTS, type CaseRecord, type CaseSubmission, type Decider, type Stores } from '../../src/interlock.js';
import { removePrefixes, sleep, testConfig, testKey } from '../support/harness.js';

const config = testConfig({ keyPrefix: `qr${randomBytes(6).toString('hex')}` });
let stores: Stores;
let decisions: DecisionsQueue;
beforeAll(async () => {
  stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  decisions = createDecisionsQueue(stores, { attempts: 2, backoffMs: 50 });
});
afterAll(async () => {
  await decisions.close();
  await stores.close();
  await removePrefixes([config.keyPrefix, `{${config.keyPrefix}-queues}`]);
});

const declining: Decider = { name: 'rules', decide: async () => ({ action: 'decline', amountCents: null, reason: 'not covered', model: 'scripted', text: 'decline' }) };

async function submitted(): Promise<CaseSubmission> {
  const id = randomBytes(5).toString('hex');
  await stores.approvals.grant({ id: `ap_${id}`, approver: 'support-lead', capCents: 2_000, scope: `payment:pi_${id}`, expiresAt: Date.now() + 3_600_000, maxUses: 1 });
  const submission: CaseSubmission = { caseId: `case-${id}`, kind: 'refund', subject: `pi_${id}`, incident: null, story: 'The jar arrived cracked.', approval: `ap_${id}`, agent: 'support-bot' };
  expect((await decisions.submit(submission, 'sam')).status).toBe('created');
  return submission;
}

/** Whether the case has a note in the cases' outbox, made at or before `before` (Redis time; default: any). */
async function noted(caseId: string, before = Number.MAX_SAFE_INTEGER): Promise<boolean> {
  return (await stores.cases.unqueued(before, 10_000)).includes(caseId);
}

/** The case once it is final and its note gone (polled, up to 10 s), or as it stands then. */
async function decided(caseId: string): Promise<{ record: CaseRecord | null; noted: boolean }> {
  const worker = startDecisionsWorker(stores, {
    decider: declining,
    effects: { propose: () => Promise.reject(new Error('nothing is proposed here')) },
    readFacts: async () => ({ chargebacks: [], refunded_by_others: 0, refundable: 10_000, charge_status: 'succeeded' }),
    premises: { refund: REFUND_FACTS, credit: CREDIT_FACTS },
    concurrency: 1,
  });
  try {
    for (let i = 0; i < 100; i += 1) {
      const record = await stores.cases.get(caseId);
      const still = await noted(caseId);
      if (record?.status.state === 'declined' && !still) return { record, noted: still };
      await sleep(100);
    }
    return { record: await stores.cases.get(caseId), noted: await noted(caseId) };
  } finally {
    await worker.close(true);
  }
}

it('queues again, past the grace, a case whose decisions job was removed before it ran, and the case is decided', async () => {
  const submission = await submitted();
  expect(await decisions.queue.remove(caseEffectId(submission.caseId))).toBe(1);

  // Within the grace the note is not due: the sweep leaves it, and the case waits.
  expect((await decisions.requeueUnqueued()).queued).not.toContain(submission.caseId);
  // Past the grace (a sweep that asks for none).
  const sweep = await decisions.requeueUnqueued(0);
  expect(sweep.queued).toContain(submission.caseId);
  expect(await (await decisions.queue.getJob(caseEffectId(submission.caseId)))?.getState()).toBe('waiting');
  expect(await noted(submission.caseId), 'the note stays until the case is final').toBe(true);

  const { record, noted: still } = await decided(submission.caseId);
  expect(record?.status.state).toBe('declined');
  expect(still, 'the worker drops the note of a case it decided').toBe(false);
});

it('keeps, timed again, the note of a case whose job still waits, and does not queue it twice', async () => {
  const submission = await submitted();
  expect(await noted(submission.caseId), 'a submission leaves the note until the case is final').toBe(true);
  const before = await stores.journal.serverTime();
  const sweep = await decisions.requeueUnqueued(0);
  expect(sweep.kept).toContain(submission.caseId);
  expect(sweep.queued).not.toContain(submission.caseId);
  // Timed at the sweep: not due again until another grace has passed.
  expect(await noted(submission.caseId, before - 1)).toBe(false);
  expect(await noted(submission.caseId, (await stores.journal.serverTime()) + CASE_OUTBOX_GRACE_MS)).toBe(true);

  const { record, noted: still } = await decided(submission.caseId);
  expect(record?.status.state).toBe('declined');
  expect(still).toBe(false);
  // A final case's job gone is nothing to queue: the next sweep has no note of it.
  await decisions.queue.remove(caseEffectId(submission.caseId));
  const after = await decisions.requeueUnqueued(0);
  expect([...after.queued, ...after.kept]).not.toContain(submission.caseId);
});
