// Rule: a recorded proposal is judged (dispatched or refused) or someone is told, whatever happens to its job: an
// effect whose job was removed before it judged the effect (BullMQ's remove, the queue's keys deleted or obliterated,
// a delayed job removed) is queued again by the next recovery pass that runs with the queue once the outbox grace
// (OUTBOX_GRACE_MS) has passed. The producer's outbox entry stays until a run of the job judges the effect (or the job
// fails for good, its not_judged alert raised); while the job stands, a pass past the grace keeps the entry and looks
// at it again only after another grace. Recovery asked about such an effect by id does not call it settled.
import { afterEach, describe, expect, it } from 'vitest';
import { startEffectsWorker } from '../../queues/effects.js';
import { createMemoryTarget, InterlockError, journalOf, settledOutcome } from '../../src/interlock.js';
import { isOutboxEntry, OUTBOX_GRACE_MS } from '../../src/redis/journal.js';
import { approvalTerms, refundProposal } from '../support/harness.js';
import { indexed, outboxRig, until, type OutboxRig } from './outbox-rig.js';
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** The effect's outbox entries in the open index, with their scores (bound at, Redis ms). */
async function outboxOf(made: OutboxRig, effectId: string): Promise<{ entry: string; at: number }[]> {
  return (await indexed(made, effectId)).filter(({ entry }) => isOutboxEntry(entry));
}

/** Every index entry of the effect aged past the outbox grace, as a pass a minute later would see it. */
async function pastGrace(made: OutboxRig, effectId: string): Promise<void> {
  for (const { entry, at } of await indexed(made, effectId)) await made.redis.zadd(made.stores.keys.openIndex, 'XX', at - OUTBOX_GRACE_MS - 1_000, entry);
}

/** A refund recorded and queued as the API does it. */
async function recordedAndQueued(made: OutboxRig): Promise<string> {
  const terms = approvalTerms();
  await made.stores.approvals.grant(terms);
  const proposed = await made.queue.propose(refundProposal({ approval: terms.id }));
  expect(proposed).toMatchObject({ status: 'recorded', queued: true });
  // Whatever index upkeep the producer left pending is done now (no waiting on its 50 ms timer).
  await journalOf(made.stores).flushIndex();
  return proposed.effectId;
}

/** The service afterwards: a pass, the entries past the grace, a pass with the queue, a worker: the effect is sent once. */
async function requeuedAndSent(made: OutboxRig, effectId: string): Promise<void> {
  const requeue = (id: string) => made.queue.requeue(id);
  await made.sender.gate.recover({ requeue });
  await pastGrace(made, effectId);
  const report = await made.sender.gate.recover({ requeue });
  expect(report.skipped.find((item) => item.effectId === effectId)?.reason).toContain('queued now');
  expect(await made.queue.queue.getJob(effectId)).toBeDefined();
  const worker = startEffectsWorker(made.stores, made.sender, { concurrency: 2 });
  closers.push(() => worker.close(true));
  expect(await until(() => settledOutcome(made.stores, effectId), (outcome) => outcome !== null, 'the effect settling')).toBe('COMMITTED');
  expect(made.target.landings).toHaveLength(1);
  // Judged: the next pass past the grace drops the outbox entries (the job recovery queued carries no token).
  await pastGrace(made, effectId);
  await made.sender.gate.recover({ requeue });
  await until(() => outboxOf(made, effectId), (entries) => entries.length === 0, 'the outbox entries going');
  expect(made.target.landings).toHaveLength(1);
}

describe('a recorded effect whose job is gone before it judged the effect', () => {
  it('a waiting job removed by hand is queued again by the next pass past the grace, and the refund is sent once', async () => {
    const made = await outboxRig(closers);
    const effectId = await recordedAndQueued(made);
    expect(await made.queue.queue.getJobState(effectId)).toBe('waiting');
    expect(await made.queue.queue.remove(effectId)).toBe(1);
    // Recovery asked about it by id, with no queue at hand: recorded and not judged, not "settled".
    const asked = await made.sender.gate.recover({ only: [effectId] });
    expect(asked.skipped.find((item) => item.effectId === effectId)?.reason).toMatch(/^recorded, not judged/);
    await requeuedAndSent(made, effectId);
  });

  it("the effects queue's keys deleted (obliterated) while the job waited: queued again, and the refund is sent once", async () => {
    const made = await outboxRig(closers);
    const effectId = await recordedAndQueued(made);
    await made.queue.queue.obliterate({ force: true });
    expect(await made.queue.queue.getJob(effectId)).toBeUndefined();
    await requeuedAndSent(made, effectId);
  });

  it('a job delayed while Stripe could not answer its premise read, removed: queued again, and sent once Stripe answers', async () => {
    const made = await outboxRig(closers);
    made.target.inject({ kind: 'premise-down' });
    const worker = startEffectsWorker(made.stores, made.sender, { concurrency: 2, transientRetry: { firstDelayMs: 60_000 } });
    const effectId = await recordedAndQueued(made);
    await until(() => made.queue.queue.getJobState(effectId), (state) => state === 'delayed', 'the job waiting out the outage');
    await worker.close(true);
    expect(await made.queue.queue.remove(effectId)).toBe(1);
    made.target.heal();
    await requeuedAndSent(made, effectId);
  });

  it('recovery asked about a recorded effect by id, with the queue, queues it if its job is gone and says it is not judged', async () => {
    const made = await outboxRig(closers);
    const effectId = await recordedAndQueued(made);
    expect(await made.queue.queue.remove(effectId)).toBe(1);
    const asked = await made.sender.gate.recover({ only: [effectId], requeue: (id) => made.queue.requeue(id) });
    const reason = asked.skipped.find((item) => item.effectId === effectId)?.reason ?? '';
    expect(reason).not.toMatch(/settled meanwhile/);
    expect(reason).toMatch(/^recorded, not judged yet: its job is queued/);
    expect(await made.queue.queue.getJobState(effectId)).toBe('waiting');
  });

  it('a job still waiting past the grace keeps its outbox entry, looked at again only after another grace', async () => {
    const made = await outboxRig(closers);
    const effectId = await recordedAndQueued(made);
    const requeue = (id: string) => made.queue.requeue(id);
    const [outboxEntry] = await outboxOf(made, effectId);
    expect(outboxEntry?.entry.split(':')[1]).toMatch(/^outbox\./);
    await pastGrace(made, effectId);
    const passAt = await made.stores.journal.serverTime();
    await made.sender.gate.recover({ requeue });
    // Kept, and scored as bound by the pass: not due again until another grace has passed.
    const kept = await outboxOf(made, effectId);
    expect(kept.map(({ entry }) => entry)).toEqual([outboxEntry?.entry]);
    expect(kept[0]?.at ?? 0).toBeGreaterThanOrEqual(passAt);
    expect((await made.queue.queue.getJobs()).length).toBe(1);
    // The job goes now: the next pass (within the grace) leaves it; the one past the grace queues it again.
    expect(await made.queue.queue.remove(effectId)).toBe(1);
    await made.sender.gate.recover({ requeue });
    expect(await made.queue.queue.getJob(effectId)).toBeUndefined();
    await requeuedAndSent(made, effectId);
  });

  it("the job's run that judges the effect drops the producer's outbox entry; so does a job that fails for good, once its alert is raised", async () => {
    const made = await outboxRig(closers);
    const effectId = await recordedAndQueued(made);
    expect(await outboxOf(made, effectId)).toHaveLength(1);
    const worker = startEffectsWorker(made.stores, made.sender, { concurrency: 2 });
    closers.push(() => worker.close(true));
    await until(() => settledOutcome(made.stores, effectId), (outcome) => outcome !== null, 'the effect settling');
    await until(() => outboxOf(made, effectId), (entries) => entries.length === 0, 'the outbox entry going');

    // A target whose every premise read Stripe refuses (a revoked key): the job fails for good before judging.
    const refused = await outboxRig(closers, (sendTimeoutMs) => ({
      ...createMemoryTarget({ tier: 3, sendTimeoutMs }),
      async readFacts() {
        throw new InterlockError('target_misconfigured', 'Stripe refused the API key (401).');
      },
    }));
    const failing = startEffectsWorker(refused.stores, refused.sender, { concurrency: 2 });
    closers.push(() => failing.close(true));
    const stranded = await recordedAndQueued(refused);
    await until(async () => (await refused.stores.alerts.get(`not_judged:${stranded}`))?.kind ?? null, (kind) => kind === 'not_judged', 'the not_judged alert');
    await until(() => outboxOf(refused, stranded), (entries) => entries.length === 0, 'the outbox entry going');
  });
});
