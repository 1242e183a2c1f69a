// Rule: a facts job that fails because Redis did not answer waits, delayed, and is said once at warn per outage of its
// own (README "Redis"): the outage of one job (a Redis Cluster master down for its slots, a command timing out on its
// keys) is not over because another job's facts were applied, so its wait does not drop back to the first delay nor
// its warning come again on every other job's success.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startFactsWorker } from '../../queues/facts.js';
import type { FactsApplier, StripeEvent } from '../../src/interlock.js';
import { sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig({ factsWorker: false });
const WARN = 'facts job not applied: Redis is not durable now, lost its data, or did not answer';

function event(id: string): StripeEvent {
  return { id, type: 'customer.updated', created: Math.floor(Date.now() / 1000), livemode: false, data: { object: { id: 'cus_x', object: 'customer' } } } as unknown as StripeEvent;
}

describe('a facts job failing for Redis while other jobs apply', () => {
  it('is warned once, its later tries at debug, however many other jobs apply meanwhile', async () => {
    const tag = randomBytes(4).toString('hex');
    const failing = `evt_redis_per_job_${tag}`;
    let failingRuns = 0;
    let applied = 0;
    const applier: FactsApplier = {
      ...rig.facts,
      applyEvent: async (given: StripeEvent) => {
        if (given.id === failing) {
          failingRuns += 1;
          // What ioredis fails a command with when its commandTimeout passes (isRedisTimeout).
          throw new Error('Command timed out');
        }
        applied += 1;
        return [];
      },
      concerned: async () => [],
    };
    const worker = startFactsWorker(rig.stores, applier, { durabilityWait: { firstDelayMs: 20, maxDelayMs: 200 } });
    try {
      await rig.factsQueue.queue.add('customer.updated', event(failing), { jobId: failing, attempts: 10 });
      // Other events keep arriving and apply between the failing job's tries.
      for (let index = 0; failingRuns < 5 && index < 500; index += 1) {
        const id = `evt_redis_per_job_ok_${tag}_${index}`;
        const before = applied;
        await rig.factsQueue.queue.add('customer.updated', event(id), { jobId: id, attempts: 10 });
        await expect.poll(() => applied, { timeout: 10_000, interval: 10 }).toBeGreaterThan(before);
      }
      expect(failingRuns).toBeGreaterThanOrEqual(5);
      const warned = rig.warnings.filter((line) => line.event === failing && String(line.msg).startsWith(WARN));
      expect({ warned: warned.length, attemptsMade: (await rig.factsQueue.queue.getJob(failing))?.attemptsMade }).toEqual({ warned: 1, attemptsMade: 0 });
    } finally {
      await worker.close();
    }
  }, 90_000);
});
