// Chaos (issue 9 §6): 4 real worker processes drain 500 queued refunds on distinct payments while a killer SIGKILLs
// random workers mid-drain and starts a new one for each. Whatever each kill interrupted (a premise read, a
// dispatch, a send in flight, an answer not yet recorded), every refund lands at Stripe exactly once — counted in the
// sandbox, per payment — and every effect's receipt verifies with the workers' key and says it happened once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalTerms } from '../../src/interlock.js';
import { pay, sleep, startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';
import { openPipeline, spawnWorker, type Pipeline, type WorkerProcess } from './pipeline-support.js';

const REFUNDS = 500;
const WORKERS = 4;
const KILLS = 6;
const COMMITTED = ['COMMITTED', 'COMMITTED_BY_RETRY', 'COMMITTED_ON_QUERY', 'REAPPLIED_AFTER_QUERY'];

let world: StripeWorld;
let pipeline: Pipeline;
beforeAll(async () => {
  world = await startStripeWorld();
  pipeline = await openPipeline(world.sandbox);
});
afterAll(async () => {
  await pipeline.close();
  await world.close();
});

/** Runs `task` over `items`, `width` at a time. */
async function inBatches<T, R>(items: readonly T[], width: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += width) results.push(...(await Promise.all(items.slice(i, i + width).map((item, j) => task(item, i + j)))));
  return results;
}

describe('chaos: workers SIGKILLed at random while they drain the queue', () => {
  it(`${REFUNDS} refunds on distinct payments, ${WORKERS} workers, ${KILLS} kills: every refund landed exactly once and every receipt verifies`, async () => {
    // The safety-net recovery pass every 2 s, so a dead worker's claims are taken over soon after its heartbeat
    // lapses even when no worker starts meanwhile.
    const env = pipeline.env({ INTERLOCK_CONCURRENCY: '8', INTERLOCK_RECOVERY_INTERVAL_MS: '2000' });
    const live = new Set<WorkerProcess>();
    const all: WorkerProcess[] = [];
    const start = () => {
      const worker = spawnWorker(env);
      all.push(worker);
      worker.ready.then(() => live.add(worker), () => undefined);
      void worker.exited.then(() => live.delete(worker));
      return worker;
    };
    const began = Date.now();
    const phase = (what: string) => console.info(`chaos +${Date.now() - began} ms: ${what}`);
    try {
      // The workers start while the payments are made and the refunds proposed.
      for (let i = 0; i < WORKERS; i += 1) start();
      const payments = await inBatches(Array.from({ length: REFUNDS }), 25, () => pay(world.stripe, 'pm_card_visa', 5_000));
      phase('payments made');
      // Decided on the facts of a payment just made (nobody touched it since): the workers re-read them before the send.
      const premises = { chargebacks: [], refunded_by_others: 0, refundable: 5_000, charge_status: 'succeeded' };
      const effectIds = await inBatches(payments, 50, async (payment, i) => {
        const terms: ApprovalTerms = { id: `ap_chaos_${i}`, approver: 'dana@support', capCents: 1_500, expiresAt: Date.now() + 3_600_000, maxUses: 1, scope: `payment:${payment.paymentIntent}` };
        await pipeline.stores.approvals.grant(terms);
        return pipeline.propose({ requestId: `case-chaos-${pipeline.config.keyPrefix}-${i}`, approval: terms.id, effect: { kind: 'refund', paymentIntent: payment.paymentIntent, amount: 1_500 }, premises });
      });

      phase('refunds proposed');
      // Each create is held 50 ms in the sandbox after it began, so the drain lasts seconds whatever the machine's
      // speed (a fast drain once finished before the first kill) and kills also find sends in flight.
      await world.sandbox.control.slowDown({ path: '/v1/refunds', ms: 50, count: REFUNDS * 2 });
      // The killer: once refunds are landing (looked for every 100 ms), a random serving worker is SIGKILLed, then one
      // every 1.5 s, and a new one started for each (each kill while refunds are still unsent is one mid-drain; the
      // report says how many were).
      let kills = 0;
      let midDrain = 0;
      let since = 0;
      let landed = 0;
      while (kills < KILLS) {
        const requests = await world.sandbox.control.requests(since);
        since = requests.at(-1)?.seq ?? since;
        landed += requests.filter((request) => request.method === 'POST' && request.path === '/v1/refunds').length;
        const serving = [...live];
        if (landed > 0 && serving.length > 0) {
          const victim = serving[Math.floor(Math.random() * serving.length)];
          victim?.child.kill('SIGKILL');
          kills += 1;
          if (landed < REFUNDS) midDrain += 1;
          start();
        }
        await sleep(kills === 0 ? 100 : 1_500);
      }
      phase(`${kills} kills, ${midDrain} while refunds were still unsent (${landed} creates seen at the last)`);
      const settled = await pipeline.untilSettled(effectIds, 150_000);
      phase('all settled');

      // Stripe's side: one refund per payment, each of the amount sent, each naming its effect.
      const perPayment = new Map<string, { amount: number; effectId: string | undefined }[]>();
      for await (const refund of world.stripe.refunds.list({ limit: 100 })) {
        const payment = typeof refund.payment_intent === 'string' ? refund.payment_intent : '';
        perPayment.set(payment, [...(perPayment.get(payment) ?? []), { amount: refund.amount, effectId: refund.metadata?.['interlock_effect_id'] }]);
      }
      const wrong = payments.flatMap((payment, i) => {
        const refunds = perPayment.get(payment.paymentIntent) ?? [];
        return refunds.length === 1 && refunds[0]?.amount === 1_500 && refunds[0].effectId === effectIds[i] ? [] : [`${payment.paymentIntent}: ${JSON.stringify(refunds)}`];
      });
      expect(wrong).toEqual([]);
      const problems = effectIds.flatMap((effectId) => {
        const answer = settled.get(effectId);
        const ok = answer !== undefined && COMMITTED.includes(answer.outcome) && answer.verification.valid === true && answer.verification.happened === true && answer.verification.happenedOnce;
        return ok ? [] : [`${effectId.slice(0, 12)}: ${answer?.outcome ?? 'unsettled'} ${answer?.verification.problems.join('; ') ?? ''}`];
      });
      expect(problems).toEqual([]);
      const outcomes: Record<string, number> = {};
      for (const answer of settled.values()) outcomes[answer.outcome] = (outcomes[answer.outcome] ?? 0) + 1;
      console.info(`chaos: ${kills} kills (${midDrain} mid-drain), ${all.length} worker processes, outcomes ${JSON.stringify(outcomes)}`);
      expect(midDrain).toBeGreaterThan(0);
    } finally {
      await Promise.all(all.map((worker) => worker.stop()));
    }
  }, 280_000);
});
