// Rule: a recorded proposal is judged (dispatched or refused) or someone is told, whatever happens to its job: an
// effect whose job was removed before it judged the effect (BullMQ's remove, the queue's keys deleted or obliterated,
// a delayed job removed) is queued again by the next recovery pass that runs with the queue once the outbox grace
// (OUTBOX_GRACE_MS) has passed. The producer's outbox entry stays until a run of the job judges the effect (or the job
// fails for good, its not_judged alert raised); while the job stands, a pass past the grace keeps the entry and looks
// at it again only after another grace. Recovery asked about such an effect by id does not call it settled.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createEffectsQueue, startEffectsWorker, type EffectsQueue } from '../../queues/effects.js';
import { createMemoryTarget, InterlockError, journalOf, openStores, settledOutcome, startSender, type MemoryTarget, type Sender, type Stores } from '../../src/interlock.js';
import { isOutboxEntry, OUTBOX_GRACE_MS } from '../../src/redis/journal.js';
import { approvalTerms, refundProposal, removePrefixes, sleep, testConfig, testKey } from '../support/harness.js';

const keyPair = testKey();
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

type Rig = { stores: Stores; sender: Sender; target: MemoryTarget; queue: EffectsQueue; redis: Redis };

async function rig(targetOf?: (sendTimeoutMs: number) => MemoryTarget): Promise<Rig> {
  const config = testConfig({ keyPrefix: `rj${randomBytes(6).toString('hex')}` });
  // Tier 3: nothing dedupes a second send, so an effect sent twice would land twice.
  const memory = targetOf?.(config.sendTimeoutMs) ?? createMemoryTarget({ tier: 3, sendTimeoutMs: config.sendTimeoutMs });
  memory.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key });
  const sender = await startSender(stores, memory);
  const queue = createEffectsQueue(stores);
  const redis = new Redis(config.redisUrl);
  closers.push(async () => {
    await queue.close();
    await sender.close();
    await stores.close();
    await redis.quit();
    await removePrefixes([config.keyPrefix, `{${config.keyPrefix}-queues}`]);
  });
  return { stores, sender, target: memory, queue, redis };
}

/** The effect's outbox entries in the open index, with their scores (bound at, Redis ms). */
async function outboxOf(made: Rig, effectId: string): Promise<{ entry: string; at: number }[]> {
  return (await indexed(made, effectId)).filter(({ entry }) => isOutboxEntry(entry));
}

/** The open index's entries for `effectId` with their scores (bound at, Redis ms). */
async function indexed(made: Rig, effectId: string): Promise<{ entry: string; at: number }[]> {
  const flat = await made.redis.zrange(made.stores.keys.openIndex, '0', '-1', 'WITHSCORES');
  const found: { entry: string; at: number }[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) if (flat[i]?.startsWith(`${effectId}:`)) found.push({ entry: flat[i] as string, at: Number(flat[i + 1]) });
  return found;
}

/** Every index entry of the effect aged past the outbox grace, as a pass a minute later would see it. */
async function pastGrace(made: Rig, effectId: string): Promise<void> {
  for (const { entry, at } of await indexed(made, effectId)) await made.redis.zadd(made.stores.keys.openIndex, 'XX', at - OUTBOX_GRACE_MS - 1_000, entry);
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, ms = 15_000): Promise<T> {
  const giveUp = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > giveUp) throw new Error(`${what} did not happen within ${ms} ms`);
    await sleep(25);
  }
}

/** A refund recorded and queued as the API does it. */
async function recordedAndQueued(made: Rig): Promise<string> {
  const terms = approvalTerms();
  await made.stores.approvals.grant(terms);
  const proposed = await made.queue.propose(refundProposal({ approval: terms.id }));
  expect(proposed).toMatchObject({ status: 'recorded', queued: true });
  // Whatever index upkeep the producer left pending is done now (no waiting on its 50 ms timer).
  await journalOf(made.stores).flushIndex();
  return proposed.effectId;
}

/** The service afterwards: a pass, the entries past the grace, a pass with the queue, a worker: the effect is sent once. */
async function requeuedAndSent(made: Rig, effectId: string): Promise<void> {
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
    const made = await rig();
    const effectId = await recordedAndQueued(made);
    expect(await made.queue.queue.getJobState(effectId)).toBe('waiting');
    expect(await made.queue.queue.remove(effectId)).toBe(1);
    // Recovery asked about it by id, with no queue at hand: recorded and not judged, not "settled".
    const asked = await made.sender.gate.recover({ only: [effectId] });
    expect(asked.skipped.find((item) => item.effectId === effectId)?.reason).toMatch(/^recorded, not judged/);
    await requeuedAndSent(made, effectId);
  });

  it("the effects queue's keys deleted (obliterated) while the job waited: queued again, and the refund is sent once", async () => {
    const made = await rig();
    const effectId = await recordedAndQueued(made);
    await made.queue.queue.obliterate({ force: true });
    expect(await made.queue.queue.getJob(effectId)).toBeUndefined();
    await requeuedAndSent(made, effectId);
  });

  it('a job delayed while Stripe could not answer its premise read, removed: queued again, and sent once Stripe answers', async () => {
    const made = await rig();
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
    const made = await rig();
    const effectId = await recordedAndQueued(made);
    expect(await made.queue.queue.remove(effectId)).toBe(1);
    const asked = await made.sender.gate.recover({ only: [effectId], requeue: (id) => made.queue.requeue(id) });
    const reason = asked.skipped.find((item) => item.effectId === effectId)?.reason ?? '';
    expect(reason).not.toMatch(/settled meanwhile/);
    expect(reason).toMatch(/^recorded, not judged yet: its job is queued/);
    expect(await made.queue.queue.getJobState(effectId)).toBe('waiting');
  });

  it('a job still waiting past the grace keeps its outbox entry, looked at again only after another grace', async () => {
    const made = await rig();
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
    const made = await rig();
    const effectId = await recordedAndQueued(made);
    expect(await outboxOf(made, effectId)).toHaveLength(1);
    const worker = startEffectsWorker(made.stores, made.sender, { concurrency: 2 });
    closers.push(() => worker.close(true));
    await until(() => settledOutcome(made.stores, effectId), (outcome) => outcome !== null, 'the effect settling');
    await until(() => outboxOf(made, effectId), (entries) => entries.length === 0, 'the outbox entry going');

    // A target whose every premise read Stripe refuses (a revoked key): the job fails for good before judging.
    const refused = await rig((sendTimeoutMs) => ({
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
