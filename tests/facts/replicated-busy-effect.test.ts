// Rule (README "What the contract rests on", INTERLOCK_REDIS_MIN_REPLICAS; queues/facts.ts factsHeld): a facts job
// waits (FactsUnheld, "too few of their replicas acknowledged it") only while fewer than N replicas hold its effect's
// chain within INTERLOCK_REDIS_WAIT_MS. A replica that acknowledges every write well within that time (it lags, but
// answers) must not make jobs wait, nor draw the "too few replicas" warning, however busy the effect is: other jobs
// appending to the effect move its head between a job's read of it and the WAIT's proof, which gave up after three
// tries and made jobs wait on healthy replicas.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startFactsWorker } from '../../queues/facts.js';
import { journalOf, type Applied, type FactsApplier, type StripeEvent } from '../../src/interlock.js';
import { pay } from './facts-rig.js';
import { APPLIED_UNHELD, replicatedFacts } from './replicated-facts-rig.js';

const replicated = replicatedFacts({ label: 'frw', waitMs: 3_000, factsWorker: false });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An applier that appends one distinct OBSERVED refund fact per event to one effect, after a "Stripe read" of `readMs`. */
function busyApplier(partition: string, effectId: string, readMs: () => number): FactsApplier {
  return {
    async applyEvent(event: StripeEvent): Promise<Applied[]> {
      await sleep(readMs());
      const draft = { kind: 'OBSERVED' as const, source: 'webhook' as const, eventId: event.id, eventType: event.type, objectType: 'refund' as const, objectId: `re_${event.id}`, status: 'succeeded', failureReason: null, amount: 1, charge: null, disputeStatus: null, disputeReason: null, created: 1 };
      const observed = await journalOf(replicated.rig.stores).observe(partition, effectId, draft as never, `k:${event.id}`);
      return [{ effectId, appended: observed.status === 'OK' ? 1 : 0, duplicates: observed.status === 'OK' ? 0 : 1, alerts: [] }];
    },
    async concerned() {
      return [effectId];
    },
    async reread() {
      return [];
    },
  } as unknown as FactsApplier;
}

async function run(events: number): Promise<number> {
  const { paymentIntent } = await pay(replicated.rig.stripe, 'pm_card_visa', 10_000);
  const effectId = await replicated.rig.refund(paymentIntent, 1_000);
  const partition = `payment:${paymentIntent}`;
  const warnedBefore = replicated.rig.warnings.length;
  const worker = startFactsWorker(replicated.rig.stores, busyApplier(partition, effectId, () => 20 + Math.random() * 60), { concurrency: 8, durabilityWait: { firstDelayMs: 1_000, maxDelayMs: 1_000 } });
  try {
    const ids = Array.from({ length: events }, () => `evt_${randomBytes(8).toString('hex')}`);
    await replicated.rig.factsQueue.queue.addBulk(ids.map((id) => ({ name: 'refund.updated', data: { id, object: 'event', type: 'refund.updated', created: 1, livemode: false, data: { object: { id: `re_${id}`, object: 'refund' } } } as unknown as StripeEvent, opts: { jobId: id, attempts: 10 } })));
    await replicated.rig.drained(120_000);
  } finally {
    await worker.close();
  }
  return replicated.rig.warnings.slice(warnedBefore).filter((line) => String(line.msg).startsWith(APPLIED_UNHELD)).length;
}

describe('a busy effect under INTERLOCK_REDIS_MIN_REPLICAS=1, its replica prompt', () => {
  it('six bursts of 40 events, each on one effect at once (concurrency 8): no job waits for replicas', async () => {
    const warned: number[] = [];
    for (let burst = 0; burst < 6; burst += 1) warned.push(await run(40));
    expect(warned).toEqual([0, 0, 0, 0, 0, 0]);
  }, 150_000);
});
