// Rule: a facts job never ends failed for good with neither its event's facts nor a watch recorded. A Redis that did
// not answer spends none of its attempts (README "Redis"): a job on its last attempt (its first nine spent while Stripe
// answered 5xx) that meets a Redis blip waits for Redis, delayed, and applies its event once Redis answers, so the
// chargeback reaches the month-old refund's receipt (it used to fail for good, its watch failing in the same blip). And
// a job failed for good outside its processor (stalled too often) while Redis is not durable is run again by the
// failed listener even when the process is stopped meanwhile: the stop waits for the listener's work before it closes
// the connection that work needs. The processor's last-attempt check agrees with BullMQ's counting: the last attempt
// watches the effects before the job fails for good, the one before it does not.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { startFactsWorker } from '../../queues/facts.js';
import { createFacts, openStores, signingKeyFromPem, stripeSide, type FactsApplier, type StripeEvent } from '../../src/interlock.js';
import { sharedFactsRig } from './facts-rig.js';
import { monthOldRefund, switchedDurability } from './waiting-jobs-support.js';
import { startRedisCutProxy } from '../support/redis-cut-proxy.js';

const rig = sharedFactsRig({ factsWorker: false });

/** Queues a chargeback's events on `charge` with no facts worker running, and keeps only its charge.dispute.created job. */
async function oneDisputeJob(charge: string) {
  const known = new Set((await rig.factsQueue.queue.getJobs(['completed', 'failed', 'delayed', 'waiting', 'active'])).map((job) => job.id));
  const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
  await rig.sandbox.control.idle();
  await expect.poll(async () => (await rig.factsQueue.queue.getJobs(['waiting'])).filter((job) => !known.has(job.id) && job.name === 'charge.dispute.created').length, { timeout: 20_000, interval: 50 }).toBe(1);
  const all = (await rig.factsQueue.queue.getJobs(['waiting'])).filter((job) => !known.has(job.id));
  // One of the chargeback's events is enough (the others, applied, would record the chargeback and hide a loss).
  for (const job of all) if (job.name !== 'charge.dispute.created') await job.remove();
  const job = all.find((one) => one.name === 'charge.dispute.created');
  if (job === undefined) throw new Error('no job');
  return { job, dispute };
}

describe('the last attempt of a facts job meeting a Redis blip', () => {
  it('waits for Redis, spending no attempt, and applies its event once Redis answers', async () => {
    const { charge, effectId } = await monthOldRefund(rig);
    const { job } = await oneDisputeJob(charge);
    const jobs = [job];
    // Nine attempts spent already (Stripe answered 5xx for four minutes): each job is on its last.
    for (const job of jobs) await rig.redis.hset(rig.factsQueue.queue.toKey(job.id ?? ''), 'atm', 9);

    // The facts process reaches Redis through a link that can drop (a network blip).
    const url = new URL(rig.config.redisUrl);
    const proxy = await startRedisCutProxy({ host: url.hostname, port: Number(url.port || 6379) });
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'warn' }, new Writable({ write(chunk: Buffer, _e, done) { for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>); done(); } }));
    const config = { ...rig.config, redisUrl: proxy.url };
    const stores = await openStores(config, { logger, signingKey: signingKeyFromPem(rig.signingKeyPem) });
    const real = createFacts(stores, stripeSide(config).reader, { rereadBeforeAppend: true });
    // The blip comes as the last attempt begins (once: the tries after it find Redis answering).
    let cuts = 0;
    const blipping: FactsApplier = { ...real, applyEvent: async (event: StripeEvent, options?: { again?: boolean }) => {
      if (cuts++ === 0) {
        proxy.cut();
        setTimeout(() => proxy.heal(), 500);
      }
      return real.applyEvent(event, options);
    } };
    const worker = startFactsWorker(stores, blipping, { durabilityWait: { firstDelayMs: 200, maxDelayMs: 400 } });
    try {
      await expect.poll(async () => (await rig.receipt(effectId)).finalMoney.disputes.length, { timeout: 30_000, interval: 100 }).toBe(1);
      // Completed by the run after the blip: its last attempt was not spent on the blip (completing counts one).
      const states = async () => Promise.all(jobs.map(async (job) => (await rig.factsQueue.queue.getJob(job.id ?? ''))?.getState()));
      await expect.poll(states, { timeout: 10_000, interval: 50 }).toEqual(jobs.map(() => 'completed'));
      expect(lines.filter((line) => String(line.msg).includes('could not be put on the reconciler'))).toEqual([]);
    } finally {
      proxy.heal();
      await worker.close();
      await stores.close();
      await proxy.close();
    }
  }, 90_000);
});

describe('a facts process stopped while its failed listener works', () => {
  it('does not leave a job failed for good with its effects unwatched', async () => {
    const { charge, effectId, now } = await monthOldRefund(rig);
    const { job } = await oneDisputeJob(charge);
    // Left by BullMQ's stalled check on a job that stalled twice (its worker killed mid-run, twice).
    await rig.redis.hset(rig.factsQueue.queue.toKey(job.id ?? ''), 'defa', 'job stalled more than allowable limit', 'stc', 2);

    const { durability } = switchedDurability();
    let concerning = false;
    const slowConcerned: FactsApplier = { ...rig.facts, concerned: async (event: StripeEvent) => {
      concerning = true;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      return rig.facts.concerned(event);
    } };
    const worker = startFactsWorker(rig.stores, slowConcerned, { durability, durabilityWait: { firstDelayMs: 20, maxDelayMs: 100 } });
    await expect.poll(() => concerning, { timeout: 20_000, interval: 10 }).toBe(true);
    // SIGTERM: the process stops.
    await worker.close();

    const state = await (await rig.factsQueue.queue.getJob(job.id ?? ''))?.getState();
    const watchedFromNow = Number(await rig.redis.zscore(rig.stores.keys.watch, effectId)) >= now;
    const unwatched = rig.warnings.filter((line) => line.event === job.id && String(line.msg).includes('could not be put on the reconciler')).map((line) => (line.err as { message?: string } | undefined)?.message);
    expect({ state, watchedFromNow, unwatched }).not.toEqual({ state: 'failed', watchedFromNow: false, unwatched: expect.anything() });
  }, 90_000);
});

describe('facts jobs failed for good outside the processor', () => {
  it('a job stalled too often while Redis is not durable runs again, waits, and is applied once Redis is durable', async () => {
    const { charge, effectId } = await monthOldRefund(rig);
    const { job, dispute } = await oneDisputeJob(charge);
    // What BullMQ's stalled check leaves on a job that stalled more than maxStalledCount (1): the next taker fails it.
    await rig.redis.hset(rig.factsQueue.queue.toKey(job.id ?? ''), 'defa', 'job stalled more than allowable limit', 'stc', 2);
    const { state, durability } = switchedDurability();
    const worker = startFactsWorker(rig.stores, rig.facts, { durability, durabilityWait: { firstDelayMs: 20, maxDelayMs: 100 } });
    try {
      await expect.poll(() => state.refusals, { timeout: 20_000, interval: 50 }).toBeGreaterThan(4);
      expect(['delayed', 'active', 'waiting']).toContain(await (await rig.factsQueue.queue.getJob(job.id ?? ''))?.getState());
      state.durable = true;
      await expect.poll(async () => (await rig.factsQueue.queue.getJob(job.id ?? ''))?.getState(), { timeout: 20_000, interval: 50 }).toBe('completed');
      expect((await rig.receipt(effectId)).finalMoney.disputes.map((one) => one.id)).toEqual([dispute.id]);
    } finally {
      await worker.close();
    }
  }, 90_000);

  it('the last attempt (the 10th: 9 made) watches before failing; the one before it is retried unwatched', async () => {
    const { charge, effectId, now } = await monthOldRefund(rig);
    const { job } = await oneDisputeJob(charge);
    await rig.redis.hset(rig.factsQueue.queue.toKey(job.id ?? ''), 'atm', 8);
    await rig.sandbox.control.failNext({ method: 'GET', status: 503, count: 100_000 });
    const worker = startFactsWorker(rig.stores, rig.facts, {});
    try {
      await expect.poll(async () => (await rig.factsQueue.queue.getJob(job.id ?? ''))?.attemptsMade, { timeout: 20_000, interval: 50 }).toBe(9);
      expect(await (await rig.factsQueue.queue.getJob(job.id ?? ''))?.getState()).not.toBe('failed');
      expect(Number(await rig.redis.zscore(rig.stores.keys.watch, effectId))).toBeLessThan(now);
      // Its backoff (256 s) cut short.
      await expect.poll(async () => (await rig.factsQueue.queue.getJob(job.id ?? ''))?.getState(), { timeout: 10_000, interval: 50 }).toBe('delayed');
      await (await rig.factsQueue.queue.getJob(job.id ?? ''))?.promote();
      await expect.poll(async () => (await rig.factsQueue.queue.getJob(job.id ?? ''))?.getState(), { timeout: 20_000, interval: 100 }).toBe('failed');
      expect(Number(await rig.redis.zscore(rig.stores.keys.watch, effectId))).toBeGreaterThanOrEqual(now);
      // Watched once, by the processor (the listener left it alone).
      expect(rig.warnings.filter((line) => line.event === job.id && String(line.msg).startsWith('facts job failed for good')).length).toBe(1);
    } finally {
      await rig.sandbox.control.clearFaults();
      await worker.close();
    }
  }, 90_000);
});
