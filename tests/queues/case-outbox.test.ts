// Rule: a case that is stored but whose decisions job was never added (its submission stopped, or lost Redis, between
// the two) is not stranded undecided: the submission notes the case in the cases' outbox before storing it, the note
// stays until the case is final (tests/queues/removed-case-job-requeued.test.ts: the worker drops it), and a recovery
// pass queues each case whose note is CASE_OUTBOX_GRACE_MS old, as its submission would have, timing the note again.
// A conflict leaves the stored case's note; a note whose case was never stored, or is decided, goes without a job; a
// case reopened and left unqueued (its finished job) runs again.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { Worker } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { CASE_OUTBOX_GRACE_MS, caseEffectId, createDecisionsQueue } from '../../queues/decisions.js';
import { startRecovery } from '../../queues/recovery.js';
import { createMemoryTarget, openStores, startSender, type CaseSubmission, type Stores } from '../../src/interlock.js';
import { approvalTerms, removePrefixes, testConfig, testKey } from '../support/harness.js';

const keyPair = testKey();
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

type Rig = { stores: Stores; redis: Redis; approval: string };

async function rig(): Promise<Rig> {
  const config = testConfig({ keyPrefix: `t${randomBytes(6).toString('hex')}` });
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key });
  const redis = new Redis(config.redisUrl);
  closers.push(async () => {
    await stores.close();
    await redis.quit();
    await removePrefixes([config.keyPrefix, `{${config.keyPrefix}-queues}`]);
  });
  const terms = approvalTerms();
  await stores.approvals.grant(terms);
  return { stores, redis, approval: terms.id };
}

function submission(rig: Rig): CaseSubmission {
  return { caseId: `case-${randomBytes(4).toString('hex')}`, kind: 'refund', subject: 'pi_1', incident: null, story: 'The parcel never arrived.', approval: rig.approval, agent: 'support-bot' };
}

/** The cases' outbox: case id -> when its note was made. */
async function notes(rig: Rig): Promise<Record<string, number>> {
  const flat = await rig.redis.zrange(rig.stores.keys.casesUnqueued, '0', '-1', 'WITHSCORES');
  const found: Record<string, number> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) found[flat[i] as string] = Number(flat[i + 1]);
  return found;
}

/** Makes the note of `caseId` look `ms` older. */
async function age(rig: Rig, caseId: string, ms: number): Promise<void> {
  const at = (await notes(rig))[caseId];
  if (at === undefined) throw new Error(`case ${caseId} has no note`);
  await rig.redis.zadd(rig.stores.keys.casesUnqueued, 'XX', at - ms, caseId);
}

/** A case stored by a submission whose queue closed under it: stored, never queued. */
async function storedNeverQueued(rig: Rig, submitted: CaseSubmission): Promise<void> {
  const closing = createDecisionsQueue(rig.stores);
  await closing.close();
  await expect(closing.submit(submitted, 'sam')).rejects.toThrow(/was stored, but queuing it failed/);
}

function running(rig: Rig) {
  const queue = createDecisionsQueue(rig.stores);
  closers.push(() => queue.close());
  return queue;
}

describe('the cases\' outbox', () => {
  it('keeps the note of a case stored and never queued, and a sweep queues it once the note is old enough', async () => {
    const r = await rig();
    const submitted = submission(r);
    await storedNeverQueued(r, submitted);
    expect((await r.stores.cases.get(submitted.caseId))?.status.state).toBe('queued');
    expect(Object.keys(await notes(r))).toEqual([submitted.caseId]);

    const queue = running(r);
    const jobId = caseEffectId(submitted.caseId);
    // Too fresh: its submission may still be on its way.
    expect(await queue.requeueUnqueued()).toEqual({ queued: [], kept: [], dropped: [], failed: [] });
    expect(await queue.queue.getJob(jobId)).toBeUndefined();

    await age(r, submitted.caseId, CASE_OUTBOX_GRACE_MS + 1_000);
    const aged = (await notes(r))[submitted.caseId] ?? Infinity;
    expect(await queue.requeueUnqueued()).toEqual({ queued: [submitted.caseId], kept: [], dropped: [], failed: [] });
    expect(await (await queue.queue.getJob(jobId))?.getState()).toBe('waiting');
    // Kept until the case is decided, timed at the sweep: due again only after another grace.
    expect((await notes(r))[submitted.caseId]).toBeGreaterThan(aged + CASE_OUTBOX_GRACE_MS);
  });

  it('keeps the note of a case queued as usual while it waits, through a conflict, and a sweep leaves it to its job', async () => {
    const r = await rig();
    const queue = running(r);
    const submitted = submission(r);
    expect(await queue.submit(submitted, 'sam')).toMatchObject({ status: 'created' });
    expect(await queue.submit({ ...submitted, story: 'Another story under the same id.' }, 'sam')).toMatchObject({ status: 'conflict' });
    expect(Object.keys(await notes(r))).toEqual([submitted.caseId]);
    await age(r, submitted.caseId, CASE_OUTBOX_GRACE_MS + 1_000);
    expect(await queue.requeueUnqueued()).toEqual({ queued: [], kept: [submitted.caseId], dropped: [], failed: [] });
  });

  it('drops, without a job, the note of a case never stored and of a case decided', async () => {
    const r = await rig();
    const queue = running(r);
    const never = `case-${randomBytes(4).toString('hex')}`;
    const decided = submission(r);
    await storedNeverQueued(r, decided);
    await r.stores.cases.setStatus(decided.caseId, { state: 'declined', decision: null, effectId: null, problems: [], error: null, attempts: 1 });
    await r.stores.cases.queueing(never, 1);
    await age(r, decided.caseId, CASE_OUTBOX_GRACE_MS + 1_000);
    const swept = await queue.requeueUnqueued();
    expect({ ...swept, dropped: [...swept.dropped].sort() }).toEqual({ queued: [], kept: [], dropped: [never, decided.caseId].sort(), failed: [] });
    expect(await queue.queue.getJob(caseEffectId(decided.caseId))).toBeUndefined();
    expect(await queue.queue.getJob(caseEffectId(never))).toBeUndefined();
    expect(await notes(r)).toEqual({});
  });

  it('runs again the finished job of a case reopened and left unqueued', async () => {
    const r = await rig();
    const queue = running(r);
    const submitted = submission(r);
    await queue.submit(submitted, 'sam');
    const jobId = caseEffectId(submitted.caseId);
    // Its job ran and ended with the case failed for a reason that passes (the Messages API was unavailable).
    const connection = r.stores.queueConnection();
    const ran = new Promise<void>((resolve) => {
      const worker = new Worker(r.stores.queues.decisions, async () => {
        await r.stores.cases.setStatus(submitted.caseId, { state: 'failed', decision: null, effectId: null, problems: [], error: { code: 'decider_unavailable', message: 'The Messages API did not answer.' }, attempts: 1 });
      }, { connection, ...r.stores.bullmq });
      worker.on('completed', () => void worker.close().then(() => connection.quit()).then(() => resolve()));
    });
    await ran;
    expect(await (await queue.queue.getJob(jobId))?.getState()).toBe('completed');

    // Submitted again by a process that stops after reopening it and before running its job again.
    await storedNeverQueued(r, submitted);
    expect((await r.stores.cases.get(submitted.caseId))?.status.state).toBe('queued');
    await age(r, submitted.caseId, CASE_OUTBOX_GRACE_MS + 1_000);
    expect(await queue.requeueUnqueued()).toEqual({ queued: [submitted.caseId], kept: [], dropped: [], failed: [] });
    expect(await (await queue.queue.getJob(jobId))?.getState()).toBe('waiting');
  });

  it('is swept by the recovery pass at a worker\'s start', async () => {
    const r = await rig();
    const submitted = submission(r);
    await storedNeverQueued(r, submitted);
    await age(r, submitted.caseId, CASE_OUTBOX_GRACE_MS + 1_000);
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: r.stores.config.sendTimeoutMs });
    const sender = await startSender(r.stores, target);
    closers.push(() => sender.close());
    const queue = running(r);
    const recovery = startRecovery(r.stores, sender, { requeueCases: () => queue.requeueUnqueued() });
    closers.push(() => recovery.close());
    await recovery.started;
    expect(await (await queue.queue.getJob(caseEffectId(submitted.caseId)))?.getState()).toBe('waiting');
    expect(Object.keys(await notes(r))).toEqual([submitted.caseId]);
  });
});
