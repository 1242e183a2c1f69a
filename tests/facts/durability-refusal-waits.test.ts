// Rule: a facts job refused because Redis is not durable (or lost its data) spends none of its attempts and is never
// failed for it: it waits, delayed, and is tried again for as long as the refusal lasts, then applied once, when Redis
// is durable again. A job failing for good while Redis is not durable is not failed with its effects unwatched: it
// waits likewise, and once Redis is durable its effects go on the reconciler's watch list. Each refused job is said
// once at warn per outage. Spending attempts, ten of them would go within minutes of a non-durable Redis, and the
// event, answered 200 and never sent again by Stripe, with them (a chargeback never reaching its receipt).
import { describe, expect, it } from 'vitest';
import { durabilityDelay, reconcile, startFactsWorker } from '../../queues/facts.js';
import type { FactsApplier, StripeEvent } from '../../src/interlock.js';
import { sharedFactsRig, type FactsRig } from './facts-rig.js';
import { DAY_MS, monthOldRefund, switchedDurability } from './waiting-jobs-support.js';

const rig = sharedFactsRig({ factsWorker: false });

const REFUSED = 'facts job not applied: Redis is not durable now';

/** The facts jobs queued since `known` was taken. */
async function jobsSince(known: Set<string | undefined>) {
  return (await rig.factsQueue.queue.getJobs(['completed', 'failed', 'delayed', 'waiting', 'active'])).filter((job) => !known.has(job.id));
}

async function jobIds(): Promise<Set<string | undefined>> {
  return new Set((await rig.factsQueue.queue.getJobs(['completed', 'failed', 'delayed', 'waiting', 'active'])).map((job) => job.id));
}

function refusalWarnings(r: FactsRig, jobId: string | undefined) {
  return r.warnings.filter((line) => line.event === jobId && String(line.msg).startsWith(REFUSED));
}

describe('a facts job refused because Redis is not durable', () => {
  it('waits delayed, spending none of its attempts however often it is refused, and is applied once when Redis is durable again', async () => {
    const { charge, effectId } = await monthOldRefund(rig);
    const { state, durability } = switchedDurability();
    const applied = new Map<string, number>();
    const worker = startFactsWorker(rig.stores, rig.facts, { durability, durabilityWait: { firstDelayMs: 20, maxDelayMs: 100 }, onApplied: (event) => applied.set(event.id, (applied.get(event.id) ?? 0) + 1) });
    try {
      const known = await jobIds();
      const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
      await rig.sandbox.control.idle();
      await expect.poll(async () => (await jobsSince(known)).length, { timeout: 20_000, interval: 50 }).toBeGreaterThan(0);
      // Every job met the refusal (said at warn): it spent no attempt on it.
      await expect.poll(async () => (await jobsSince(known)).every((job) => job.attemptsMade > 0 || refusalWarnings(rig, job.id).length > 0), { timeout: 20_000, interval: 50 }).toBe(true);
      const jobs = await jobsSince(known);
      expect(jobs.map((job) => job.attemptsMade)).toEqual(jobs.map(() => 0));
      // More refusals than any job has attempts (10): spent as attempts, they would have failed every job for good.
      await expect.poll(() => state.refusals, { timeout: 30_000, interval: 50 }).toBeGreaterThan(jobs.length * 12);
      const meanwhile = await jobsSince(known);
      expect(meanwhile.map((job) => job.attemptsMade)).toEqual(meanwhile.map(() => 0));
      expect(meanwhile.map((job) => job.failedReason)).toEqual(meanwhile.map(() => undefined));
      // Waiting for their next try (delayed, or due and taken again), none failed.
      const states = await Promise.all(meanwhile.map((job) => job.getState()));
      expect(states.filter((one) => one !== 'delayed' && one !== 'active' && one !== 'waiting')).toEqual([]);
      expect(applied.size).toBe(0);
      expect((await rig.receipt(effectId)).finalMoney.disputes).toEqual([]);
      // Said once per job for the whole outage, at warn, once the job was moved to delayed; each later refusal at debug.
      for (const job of meanwhile) expect(refusalWarnings(rig, job.id)).toEqual([expect.objectContaining({ code: 'redis_not_durable', refusals: 1, retryAt: expect.any(Number) })]);

      // Redis is durable again: every job is applied, once, and the chargeback reaches the receipt.
      state.durable = true;
      await expect.poll(async () => Promise.all((await jobsSince(known)).map((job) => job.getState())), { timeout: 20_000, interval: 50 }).toEqual(jobs.map(() => 'completed'));
      const finished = await jobsSince(known);
      expect(finished.map((job) => job.attemptsMade)).toEqual(finished.map(() => 1));
      expect(finished.map((job) => applied.get(job.id ?? ''))).toEqual(finished.map(() => 1));
      expect((await rig.receipt(effectId)).finalMoney.disputes.map((one) => one.id)).toEqual([dispute.id]);
    } finally {
      await worker.close();
    }
  }, 90_000);

  it("failing for good while Redis is not durable, waits instead of failing with its effects unwatched, and is watched once Redis is durable", async () => {
    const { charge, effectId, now } = await monthOldRefund(rig);
    const { state, durability } = switchedDurability();
    state.durable = true;
    // Every read is refused (a key rotation), so each run fails for good; Redis stops being durable as the first does,
    // so the watch that failure calls for is refused.
    const failing: FactsApplier = {
      ...rig.facts,
      applyEvent: async (event: StripeEvent, options?: { again?: boolean }) => {
        try {
          return await rig.facts.applyEvent(event, options);
        } catch (error) {
          if (state.refusals === 0) state.durable = false;
          throw error;
        }
      },
    };
    const worker = startFactsWorker(rig.stores, failing, { durability, durabilityWait: { firstDelayMs: 20, maxDelayMs: 100 } });
    try {
      const known = await jobIds();
      await rig.sandbox.control.failNext({ method: 'GET', status: 401, count: 100_000 });
      const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
      await rig.sandbox.control.idle();
      await expect.poll(async () => (await jobsSince(known)).length, { timeout: 20_000, interval: 50 }).toBeGreaterThan(0);
      await expect.poll(() => state.refusals, { timeout: 20_000, interval: 50 }).toBeGreaterThan(5);
      const meanwhile = await jobsSince(known);
      const states = await Promise.all(meanwhile.map((job) => job.getState()));
      // Refused (delayed, or due and taken again), not failed: nothing recorded and nothing watched yet, no attempt spent.
      expect(states.filter((one) => one !== 'delayed' && one !== 'active' && one !== 'waiting')).toEqual([]);
      expect(meanwhile.map((job) => job.attemptsMade)).toEqual(meanwhile.map(() => 0));
      for (const job of meanwhile) expect(refusalWarnings(rig, job.id)).toEqual([expect.objectContaining({ code: 'redis_not_durable', refusals: 1, retryAt: expect.any(Number) })]);
      expect(Number(await rig.redis.zscore(rig.stores.keys.watch, effectId))).toBeLessThan(now);
      expect(rig.warnings.filter((line) => String(line.msg).includes("could not be put on the reconciler's watch list"))).toEqual([]);

      // Redis is durable again, Stripe still refuses: the jobs fail for good now, their effects watched.
      state.durable = true;
      await expect.poll(async () => Promise.all((await jobsSince(known)).map((job) => job.getState())), { timeout: 20_000, interval: 50 }).toEqual(meanwhile.map(() => 'failed'));
      await expect.poll(async () => Number(await rig.redis.zscore(rig.stores.keys.watch, effectId)), { timeout: 10_000, interval: 50 }).toBeGreaterThanOrEqual(now);

      // The next pass finds the month-old refund through the watch list and records the chargeback.
      await rig.sandbox.control.clearFaults();
      const report = await reconcile(rig.stores, rig.facts, (await rig.stores.journal.serverTime()) - 3 * DAY_MS);
      expect(report.unread).toBe(0);
      expect((await rig.receipt(effectId)).finalMoney.disputes.map((one) => one.id)).toEqual([dispute.id]);
    } finally {
      await rig.sandbox.control.clearFaults();
      await worker.close();
    }
  }, 90_000);
});

describe('the wait of a job refused for durability', () => {
  it('doubles from the first delay up to the longest, and stays there however long the refusal lasts', () => {
    const wait = { firstDelayMs: 1_000, maxDelayMs: 300_000 };
    expect([1, 2, 3, 4, 9, 10, 100, 10_000].map((refusals) => durabilityDelay(refusals, wait))).toEqual([1_000, 2_000, 4_000, 8_000, 256_000, 300_000, 300_000, 300_000]);
  });
});
