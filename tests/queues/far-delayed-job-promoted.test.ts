// Rule: a recorded effect is never left waiting unjudged, silently, behind a job delayed longer than the service ever
// delays one. A job under the effect's id delayed far off (added so before its producer queued it, or the real job
// moved to the delayed set by someone with the queue's keys) is promoted by the producer that finds it, or by the next
// recovery pass that asks for the effect's job, with a warning naming the effect, the job and the delay found; the
// effect is then judged, and its money moves once. A job delayed by the service's own retry (within
// longestOwnJobDelayMs, the bound derived from its retry settings plus a margin for clock skew) is left delayed.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { longestOwnJobDelayMs, startEffectsWorker, type EffectsWorkerOptions } from '../../queues/effects.js';
import { effectIdFor, journalOf, settledOutcome } from '../../src/interlock.js';
import { OUTBOX_GRACE_MS } from '../../src/redis/journal.js';
import { approvalTerms, refundProposal } from '../support/harness.js';
import { indexed, outboxRig, until, type OutboxRig } from './outbox-rig.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

const DAY_MS = 86_400_000;

type Line = { level: number; msg: string; effectId?: string; jobId?: string; delayMs?: number };
type Rig = OutboxRig & { lines: Line[] };

/** The outbox rig (outbox-rig.ts: a tier-3 memory target, so a second send would land twice), its log lines kept. */
async function rig(): Promise<Rig> {
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n')) if (text.trim() !== '') lines.push(JSON.parse(text) as Line);
      done();
    },
  });
  return { ...(await outboxRig(closers, undefined, pino({ level: 'info' }, sink))), lines };
}

function worker(made: Rig, options: EffectsWorkerOptions = {}) {
  const started = startEffectsWorker(made.stores, made.sender, { concurrency: 2, ...options });
  closers.push(() => started.close(true));
  return started;
}

/** A refund whose approval is granted, not yet proposed. */
async function granted(made: Rig) {
  const terms = approvalTerms();
  await made.stores.approvals.grant(terms);
  return refundProposal({ approval: terms.id });
}

/** Until when (this process's clock, ms) the job is delayed, read from BullMQ's delayed set; null when it is not delayed. */
async function delayedUntil(made: Rig, jobId: string): Promise<number | null> {
  const score = await made.redis.zscore(made.queue.queue.toKey('delayed'), jobId);
  return score === null ? null : Math.floor(Number(score) / 0x1000);
}

/** Two recovery passes with the queue, the effect's index entries aged past the outbox grace in between. */
async function passPastGrace(made: Rig, effectId: string): Promise<void> {
  const requeue = (id: string) => made.queue.requeue(id);
  await journalOf(made.stores).flushIndex();
  await made.sender.gate.recover({ requeue });
  for (const { entry, at } of await indexed(made, effectId)) await made.redis.zadd(made.stores.keys.openIndex, 'XX', at - OUTBOX_GRACE_MS - 1_000, entry);
  await made.sender.gate.recover({ requeue });
}

/** The job a worker (premise reads failing) put off for its transient retry, the worker closed and Stripe answering again. */
async function delayedByRetry(made: Rig): Promise<{ effectId: string; proposal: ReturnType<typeof refundProposal> }> {
  made.target.inject({ kind: 'premise-down' });
  const first = worker(made, { transientRetry: { firstDelayMs: 60_000 } });
  const proposal = await granted(made);
  const { effectId } = await made.queue.propose(proposal);
  await until(() => made.queue.queue.getJobState(effectId), (state) => state === 'delayed', 'the job waiting out the outage');
  await first.close(true);
  made.target.heal();
  return { effectId, proposal };
}

function promotedWarnings(made: Rig, effectId: string): Line[] {
  return made.lines.filter((line) => line.level === 40 && line.effectId === effectId && line.msg.includes('promoted'));
}

describe('an effects job delayed far longer than the service delays one', () => {
  it('added under the effect id, delayed 30 days, before the producer queued it: the producer promotes it and the refund is sent once', async () => {
    const made = await rig();
    const proposal = await granted(made);
    const effectId = effectIdFor({ requestId: proposal.requestId, effect: proposal.effect });
    await made.queue.queue.add('effect', { proposal: {}, recordedAt: 0 }, { jobId: effectId, delay: 30 * DAY_MS });
    const proposed = await made.queue.propose(proposal);
    expect(proposed).toMatchObject({ effectId, status: 'recorded', queued: true });
    expect(await made.queue.queue.getJobState(effectId)).toBe('waiting');
    const [warning] = promotedWarnings(made, effectId);
    expect(warning).toMatchObject({ jobId: effectId });
    expect(warning?.delayMs).toBeGreaterThan(29 * DAY_MS);
    worker(made);
    expect(await until(() => settledOutcome(made.stores, effectId), (outcome) => outcome !== null, 'the effect settling')).toBe('COMMITTED');
    expect(made.target.landings).toHaveLength(1);
  });

  it('the real job moved to the delayed set 30 days off: the next recovery pass past the grace promotes it, and the refund is sent once', async () => {
    const made = await rig();
    const { effectId } = await delayedByRetry(made);
    await made.queue.queue.backend.changeDelay(effectId, 30 * DAY_MS);
    expect(await delayedUntil(made, effectId)).toBeGreaterThan(Date.now() + 29 * DAY_MS);
    await passPastGrace(made, effectId);
    expect(await made.queue.queue.getJobState(effectId)).toBe('waiting');
    expect(promotedWarnings(made, effectId)).toHaveLength(1);
    worker(made);
    expect(await until(() => settledOutcome(made.stores, effectId), (outcome) => outcome !== null, 'the effect settling')).toBe('COMMITTED');
    expect(made.target.landings).toHaveLength(1);
  });

  it("the waiting job moved to the delayed set by a write to the queue's keys, scored +inf: the next recovery pass past the grace promotes it", async () => {
    const made = await rig();
    const { effectId } = await made.queue.propose(await granted(made));
    expect(await made.redis.lrem(made.queue.queue.toKey('wait'), 0, effectId)).toBe(1);
    await made.redis.zadd(made.queue.queue.toKey('delayed'), '+inf', effectId);
    expect(await made.queue.queue.getJobState(effectId)).toBe('delayed');
    await passPastGrace(made, effectId);
    expect(await made.queue.queue.getJobState(effectId)).toBe('waiting');
    expect(promotedWarnings(made, effectId)).toHaveLength(1);
    worker(made);
    expect(await until(() => settledOutcome(made.stores, effectId), (outcome) => outcome !== null, 'the effect settling')).toBe('COMMITTED');
    expect(made.target.landings).toHaveLength(1);
  });

  it('a job delayed by its own retry backoff, or up to the longest delay the service sets, is left delayed by recovery and by the same request sent again', async () => {
    const made = await rig();
    const { effectId, proposal } = await delayedByRetry(made);
    const backoff = await delayedUntil(made, effectId);
    expect(backoff).not.toBeNull();
    await passPastGrace(made, effectId);
    expect(await made.queue.propose(proposal)).toMatchObject({ status: 'exists', queued: true });
    expect(await made.queue.queue.getJobState(effectId)).toBe('delayed');
    expect(await delayedUntil(made, effectId)).toBe(backoff);
    // Delayed just within the bound (a minute short of it): still the service's own, and left as it is.
    await made.queue.queue.backend.changeDelay(effectId, longestOwnJobDelayMs(made.stores.config) - 60_000);
    const within = await delayedUntil(made, effectId);
    await passPastGrace(made, effectId);
    expect(await made.queue.queue.getJobState(effectId)).toBe('delayed');
    expect(await delayedUntil(made, effectId)).toBe(within);
    expect(promotedWarnings(made, effectId)).toHaveLength(0);
    expect(made.target.landings).toHaveLength(0);
  });

  it('delayed a minute past that bound: the same request sent again promotes it, and the refund is sent once', async () => {
    const made = await rig();
    const { effectId, proposal } = await delayedByRetry(made);
    await made.queue.queue.backend.changeDelay(effectId, longestOwnJobDelayMs(made.stores.config) + 60_000);
    expect(await made.queue.propose(proposal)).toMatchObject({ status: 'exists', queued: true });
    expect(await made.queue.queue.getJobState(effectId)).toBe('waiting');
    expect(promotedWarnings(made, effectId)).toHaveLength(1);
    worker(made);
    expect(await until(() => settledOutcome(made.stores, effectId), (outcome) => outcome !== null, 'the effect settling')).toBe('COMMITTED');
    expect(made.target.landings).toHaveLength(1);
  });
});
