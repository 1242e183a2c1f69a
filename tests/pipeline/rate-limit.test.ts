// Stripe's rate limit (issue 9 §7): a 429 on a read is a retry-later and on a write an unknown outcome whose claim
// stays (tests/stripe/errors.test.ts); here, the worker slows down instead of hammering. While the sandbox answers
// every matching request with 429, the effects queue pauses for Retry-After (or INTERLOCK_RATE_LIMIT_BACKOFF_MS) at
// each 429, so the requests Stripe sees in the window stay few — about one per running job per pause — and once the
// limit lifts every refund lands exactly once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEffectsWorker, type EffectsWorker } from '../../queues/effects.js';
import { startSender, type ApprovalTerms, type Sender } from '../../src/interlock.js';
import { pay, sleep, startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';
import { openPipeline, type Pipeline } from './pipeline-support.js';

let world: StripeWorld;
beforeAll(async () => {
  world = await startStripeWorld();
});
afterAll(() => world.close());

const CONCURRENCY = 4;
const REFUNDS = 8;
const WINDOW_MS = 3_000;

type Case = { name: string; fault: { path?: string; method?: 'POST'; retry_after?: number }; pauseMs: number; outcomes: string[] };

const CASES: Case[] = [
  // Every request limited, no Retry-After: the premise reads fail first, and the configured backoff applies.
  { name: 'every call answered 429 without Retry-After (the reads are limited; INTERLOCK_RATE_LIMIT_BACKOFF_MS)', fault: {}, pauseMs: 1_000, outcomes: ['COMMITTED'] },
  // Only the create limited, with Retry-After: 1 s: each send's outcome is unknown, its claim stays, and the job
  // resends under the same key after the pause (the recovery of its own claim: COMMITTED_BY_RETRY); a job the
  // pause kept from starting during the window sends once, after it (COMMITTED).
  { name: 'the refund create answered 429 with Retry-After: 1 (the sends are limited; their claims stay)', fault: { path: '/v1/refunds', method: 'POST', retry_after: 1 }, pauseMs: 1_000, outcomes: ['COMMITTED_BY_RETRY', 'COMMITTED'] },
];

describe('a rate-limited Stripe slows the workers down', () => {
  it.each(CASES)('$name: few requests during the limit, then every refund exactly once', async ({ fault, pauseMs, outcomes }) => {
    const pipeline: Pipeline = await openPipeline(world.sandbox);
    let sender: Sender | null = null;
    let worker: EffectsWorker | null = null;
    try {
      const payments = await Promise.all(Array.from({ length: REFUNDS }, () => pay(world.stripe, 'pm_card_visa', 5_000)));
      const effectIds: string[] = [];
      for (const [i, payment] of payments.entries()) {
        const terms: ApprovalTerms = { id: `ap_rate_${i}_${pipeline.config.keyPrefix}`, approver: 'dana@support', capCents: 2_000, expiresAt: Date.now() + 3_600_000, maxUses: 1, scope: `payment:${payment.paymentIntent}` };
        await pipeline.stores.approvals.grant(terms);
        effectIds.push(await pipeline.propose({ requestId: `case-rate-${pipeline.config.keyPrefix}-${i}`, approval: terms.id, effect: { kind: 'refund', paymentIntent: payment.paymentIntent, amount: 2_000 } }));
      }
      await world.sandbox.control.failNext({ ...fault, status: 429, type: 'rate_limit_error', code: 'rate_limit', message: 'Too many requests hit the API too quickly.', count: 100_000 });
      const since = (await world.sandbox.control.requests()).at(-1)?.seq ?? 0;
      sender = await startSender(pipeline.stores, pipeline.stripe.target);
      worker = startEffectsWorker(pipeline.stores, sender, { concurrency: CONCURRENCY, rateLimitBackoffMs: pauseMs });
      await sleep(WINDOW_MS);
      await world.sandbox.control.clearFaults();
      const limited = (await world.sandbox.control.requests(since)).filter((request) => request.status === 429);
      // About one request per running job per pause (plus the reads of a resend before its limited create);
      // without the pause each job would retry every few hundred ms and the window would see several times more.
      const bound = CONCURRENCY * (WINDOW_MS / pauseMs + 1);
      console.info(`429s answered during the ${WINDOW_MS} ms window: ${limited.length} (bound ${bound})`);
      expect(limited.length, limited.map((request) => `${request.method} ${request.path}`).join('\n')).toBeGreaterThan(0);
      expect(limited.length).toBeLessThanOrEqual(bound);

      const settled = await pipeline.untilSettled(effectIds, 30_000);
      for (const [i, payment] of payments.entries()) {
        const effectId = effectIds[i] ?? '';
        const answer = settled.get(effectId);
        expect(outcomes, JSON.stringify((await pipeline.stores.journal.receipt(effectId))?.entries.slice(3))).toContain(answer?.outcome);
        expect(answer?.verification.valid).toBe(true);
        const refunds = (await world.stripe.refunds.list({ payment_intent: payment.paymentIntent })).data;
        expect(refunds.map((refund) => [refund.amount, refund.status, refund.metadata?.['interlock_effect_id']])).toEqual([[2_000, 'succeeded', effectId]]);
      }
    } finally {
      await world.sandbox.control.clearFaults();
      await worker?.close(true);
      await sender?.close();
      await pipeline.close();
    }
  }, 60_000);
});
