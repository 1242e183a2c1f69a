// Rule: a proposal that is recorded but whose job was never added (its producer stopped, or lost Redis, between the
// two) is not stranded: the binding's outbox entry stays in the open index until the effect is judged, and once it is
// OUTBOX_GRACE_MS old a recovery pass queues the proposal (the job its producer would have added) and keeps the entry
// until a pass finds the effect judged, so the effect is judged and its money moves once. A proposal queued as usual
// leaves no entry behind once its job judged it, an entry of an effect already judged goes without a job, and a job
// that failed for good is not run again by the sweep (its not_judged alert asks a person; a sweep retrying it every
// pass would undo the give-up). tests/queues/removed-job-requeued.test.ts has the rules of a job removed.
import { UnrecoverableError, Worker } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { createEffectsQueue, startEffectsWorker } from '../../queues/effects.js';
import { InterlockError, settledOutcome } from '../../src/interlock.js';
import { OUTBOX_GRACE_MS } from '../../src/redis/journal.js';
import { approvalTerms, refundProposal, sleep } from '../support/harness.js';
import { indexed, outboxRig, until, type OutboxRig } from './outbox-rig.js';
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** Makes the entries of `effectId` look `ms` older, as if that much time had passed since the binding. */
async function age(rig: OutboxRig, effectId: string, ms: number): Promise<void> {
  for (const { entry, at } of await indexed(rig, effectId)) await rig.redis.zadd(rig.stores.keys.openIndex, 'XX', at - ms, entry);
}

/** A proposal recorded by a producer whose queue closed under it: recorded, never queued. */
async function recordedNeverQueued(rig: OutboxRig, proposal: unknown): Promise<string> {
  const closing = createEffectsQueue(rig.stores);
  await closing.close();
  const failed = await closing.propose(proposal).catch((error: unknown) => error);
  expect(failed).toBeInstanceOf(InterlockError);
  return (failed as InterlockError).message.slice('Effect '.length, 'Effect '.length + 64);
}

describe('the producers\' outbox', () => {
  it('a recorded proposal with no job is queued by a recovery pass once its entry is past the grace, and commits once', async () => {
    const made = await outboxRig(closers);
    const terms = approvalTerms();
    await made.stores.approvals.grant(terms);
    const effectId = await recordedNeverQueued(made, refundProposal({ approval: terms.id }));
    expect((await made.stores.journal.receipt(effectId))?.entries.map((entry) => entry.kind)).toEqual(['PROPOSED']);
    expect((await indexed(made, effectId)).map(({ entry }) => entry.split(':')[1]?.startsWith('outbox.'))).toEqual([true]);
    const requeue = (id: string) => made.queue.requeue(id);

    // Young: its producer may still be adding the job. Nothing is queued, the entry stays.
    await made.sender.gate.recover({ requeue });
    expect(await made.queue.queue.getJob(effectId)).toBeUndefined();
    expect(await indexed(made, effectId)).toHaveLength(1);

    await age(made, effectId, OUTBOX_GRACE_MS + 1_000);
    const report = await made.sender.gate.recover({ requeue });
    expect(report.skipped).toContainEqual(expect.objectContaining({ effectId, reason: expect.stringContaining('queued now') }));
    expect(await (await made.queue.queue.getJob(effectId))?.getState()).toBe('waiting');
    // The entry stays while the job stands (it is queued again should the job go before judging the effect).
    expect(await indexed(made, effectId)).toHaveLength(1);

    const worker = startEffectsWorker(made.stores, made.sender, { concurrency: 2 });
    closers.push(() => worker.close(true));
    await until(() => settledOutcome(made.stores, effectId), (outcome) => outcome !== null, 'the effect settling');
    expect(await settledOutcome(made.stores, effectId)).toBe('COMMITTED');
    // A second pass past the grace finds nothing more to queue and drops the entry, and the money moved once.
    await age(made, effectId, OUTBOX_GRACE_MS + 1_000);
    await made.sender.gate.recover({ requeue });
    await until(() => indexed(made, effectId), (entries) => entries.length === 0, 'the outbox entry going');
    await sleep(300);
    expect(made.target.landings).toHaveLength(1);
  });

  it('a proposal queued as usual leaves no outbox entry behind once its job judged it', async () => {
    const made = await outboxRig(closers);
    const terms = approvalTerms();
    await made.stores.approvals.grant(terms);
    const proposed = await made.queue.propose(refundProposal({ approval: terms.id }));
    expect(proposed).toMatchObject({ status: 'recorded', queued: true });
    expect(proposed).not.toHaveProperty('outbox');
    const worker = startEffectsWorker(made.stores, made.sender, { concurrency: 2 });
    closers.push(() => worker.close(true));
    await until(() => settledOutcome(made.stores, proposed.effectId), (outcome) => outcome !== null, 'the effect settling');
    await until(() => indexed(made, proposed.effectId), (entries) => entries.length === 0, 'the outbox entry going');
  });

  it('an old outbox entry of an effect already judged goes without a job; without a requeue it stays for a pass that has one', async () => {
    const made = await outboxRig(closers);
    const terms = approvalTerms({ maxUses: 1 });
    await made.stores.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    const effectId = await recordedNeverQueued(made, proposal);
    await age(made, effectId, OUTBOX_GRACE_MS + 1_000);
    // A pass of a process that runs no queues leaves it.
    await made.sender.gate.recover();
    expect(await indexed(made, effectId)).toHaveLength(1);
    // The effect is judged meanwhile (the same request sent again and run).
    const worker = startEffectsWorker(made.stores, made.sender, { concurrency: 2 });
    closers.push(() => worker.close(true));
    await made.queue.propose(proposal);
    await until(() => settledOutcome(made.stores, effectId), (outcome) => outcome !== null, 'the effect settling');
    await age(made, effectId, OUTBOX_GRACE_MS + 1_000);
    const jobsBefore = (await made.queue.queue.getJobs()).length;
    const report = await made.sender.gate.recover({ requeue: (id) => made.queue.requeue(id) });
    expect(report.skipped.find((item) => item.effectId === effectId)?.reason).not.toContain('queued now');
    await until(() => indexed(made, effectId), (entries) => entries.length === 0, 'the outbox entry going');
    expect((await made.queue.queue.getJobs()).length).toBe(jobsBefore);
    expect(made.target.landings).toHaveLength(1);
  });

  // Rule: a pass with no queue (`interlock recover`) tells an effect already judged from a proposal never queued: it
  // drops the old outbox entry of a settled effect and leaves nothing for later (it reported a committed effect as
  // "recorded, never queued" with a retry time, and `interlock recover` exited 4, for as long as no service ran).
  it('an old outbox entry of an effect already judged goes on a pass with no queue too, which leaves nothing for later', async () => {
    const made = await outboxRig(closers);
    const terms = approvalTerms({ maxUses: 1 });
    await made.stores.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    const effectId = await recordedNeverQueued(made, proposal);
    const worker = startEffectsWorker(made.stores, made.sender, { concurrency: 2 });
    closers.push(() => worker.close(true));
    await made.queue.propose(proposal);
    await until(() => settledOutcome(made.stores, effectId), (outcome) => outcome !== null, 'the effect settling');
    await age(made, effectId, OUTBOX_GRACE_MS + 1_000);
    const report = await made.sender.gate.recover();
    const skipped = report.skipped.find((item) => item.effectId === effectId);
    expect(skipped?.reason ?? '').not.toContain('never queued');
    expect(skipped?.retryAt).toBeUndefined();
    expect(report.nextAt).toBeNull();
    await until(() => indexed(made, effectId), (entries) => entries.length === 0, 'the outbox entry going');
    expect(made.target.landings).toHaveLength(1);
  });

  it('a job that failed for good is left failed: the sweep neither runs it again nor says it queued one', async () => {
    const made = await outboxRig(closers);
    const terms = approvalTerms();
    await made.stores.approvals.grant(terms);
    const proposed = await made.queue.propose(refundProposal({ approval: terms.id }));
    const effectId = proposed.effectId;
    // A worker that fails every job for good.
    const failing = new Worker(made.stores.queues.effects, async () => {
      throw new UnrecoverableError('failed for good');
    }, { connection: made.stores.queueConnection(), ...made.stores.bullmq });
    closers.push(() => failing.close());
    await until(async () => (await made.queue.queue.getJob(effectId))?.getState(), (state) => state === 'failed', 'the job failing');
    await failing.close();
    // Its outbox entry, which a worker that failed it for good without dropping it (this one is not the effects
    // worker) leaves, past the grace.
    await age(made, effectId, OUTBOX_GRACE_MS + 1_000);
    expect(await indexed(made, effectId)).toHaveLength(1);
    const report = await made.sender.gate.recover({ requeue: (id) => made.queue.requeue(id) });
    expect(report.skipped.find((item) => item.effectId === effectId)?.reason).not.toContain('queued now');
    expect(await (await made.queue.queue.getJob(effectId))?.getState()).toBe('failed');
    await until(() => indexed(made, effectId), (entries) => entries.length === 0, 'the outbox entry going');
    expect(made.target.landings).toHaveLength(0);
  });
});
