// Rule (README "What the contract rests on", INTERLOCK_REDIS_MIN_REPLICAS; DESIGN §3/§8 facts): with
// INTERLOCK_REDIS_MIN_REPLICAS=N a facts job completes only once N replicas of its effect's master hold what it applied
// (the chain as the run left it: its own OBSERVED entries, and those an earlier run of it recorded), so a failover
// cannot lose a fact Stripe will not send again. While they do not, the job waits as for a Redis outage (delayed, no
// attempt spent) and applies its event again later, each run proving the chain again, the earlier run's fact included.
import { describe, expect, it } from 'vitest';
import { createKeys } from '../../src/redis/keys.js';
import { until } from '../redis/replicated-pair.js';
import { pay } from './facts-rig.js';
import { APPLIED_UNHELD, replicatedFacts } from './replicated-facts-rig.js';

const replicated = replicatedFacts({ label: 'ra', waitMs: 2_000 });

describe('a facts job under INTERLOCK_REDIS_MIN_REPLICAS=1', () => {
  it('waits, delayed and spending no attempt, while the replica does not hold the chargeback it recorded, and completes once it does', async () => {
    const { paymentIntent, charge } = await pay(replicated.rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await replicated.rig.refund(paymentIntent, 2_000);
    await replicated.rig.sandbox.control.idle();
    await replicated.rig.drained();
    const state = createKeys(replicated.rig.config.keyPrefix).state(`payment:${paymentIntent}`, effectId);

    // The replica stops (a stalled host): it takes nothing more and acknowledges nothing.
    replicated.pair.replica.process.kill('SIGSTOP');
    let whileBehind: { state: string; attemptsMade: number; ranAgain: boolean; applied: boolean; warned: number; answered503: boolean };
    let eventId: string;
    try {
      const answersBefore = replicated.rig.answers.length;
      const dispute = await replicated.rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
      await replicated.rig.sandbox.control.idle();
      // Recorded on the master all the same.
      await replicated.rig.until(effectId, (v) => v.finalMoney.disputes.some((d) => d.id === dispute.id));
      const event = (await replicated.rig.stripe.events.list({ type: 'charge.dispute.created' })).data.find((one) => (one.data.object as { id?: string }).id === dispute.id);
      if (event === undefined) throw new Error('no charge.dispute.created');
      eventId = event.id;
      // Run again while the replica is still stopped: that run finds the fact recorded, and must prove it too.
      await until(async () => {
        const job = await replicated.rig.factsQueue.queue.getJob(event.id);
        return job !== undefined && job.attemptsStarted >= 2 && (await job.getState()) === 'delayed';
      }, 'the job to be run again and delayed again');
      const job = await replicated.rig.factsQueue.queue.getJob(event.id);
      whileBehind = {
        state: (await job?.getState()) ?? 'gone',
        attemptsMade: job?.attemptsMade ?? -1,
        ranAgain: (job?.attemptsStarted ?? 0) >= 2,
        applied: replicated.rig.applied.some((one) => one.event.id === event.id),
        warned: replicated.rig.warnings.filter((line) => line.event === event.id && String(line.msg).startsWith(APPLIED_UNHELD)).length,
        answered503: replicated.rig.answers.slice(answersBefore).includes(503),
      };
    } finally {
      replicated.pair.replica.process.kill('SIGCONT');
    }
    expect(whileBehind).toEqual({ state: 'delayed', attemptsMade: 0, ranAgain: true, applied: false, warned: 1, answered503: true });

    // The replica back: the job's next run proves the chain and completes; the replica holds the chain the master holds.
    await until(async () => (await replicated.rig.factsQueue.queue.getJob(eventId))?.finishedOn !== undefined, 'the job to complete');
    expect({
      state: await (await replicated.rig.factsQueue.queue.getJob(eventId))?.getState(),
      applied: replicated.rig.applied.some((one) => one.event.id === eventId),
      replicaHead: await replicated.pair.onReplica.hget(state, 'head'),
    }).toEqual({ state: 'completed', applied: true, replicaHead: await replicated.pair.onPrimary.hget(state, 'head') });
  }, 60_000);
});
