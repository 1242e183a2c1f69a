// Rule: a Stripe that answers every refund POST with 429 is logged as an outage is (the first at once, then at most
// one line per 10 s with a count), never one line per job put back or per resend; and recovery honours the effects
// queue's pause as every worker does: a pass during the pause sends nothing, and a pass whose first resend meets a 429
// pauses every worker and sends nothing more, however many effects wait (README "Rate limits").
// Stripe's rate limit (issue 9 §7): a 429 on a read is a retry-later and on a write an unknown outcome whose claim
// stays (tests/stripe/errors.test.ts); here, the worker slows down instead of hammering. While the sandbox answers
// every matching request with 429, the effects queue pauses for Retry-After (or INTERLOCK_RATE_LIMIT_BACKOFF_MS) at
// each 429, so the requests Stripe sees in the window stay few — about one per running job per pause — and once the
// limit lifts every refund lands exactly once.
import { Queue } from 'bullmq';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEffectsWorker, type EffectsWorker } from '../../queues/effects.js';
import { startRecovery, type Recovery } from '../../queues/recovery.js';
import { REPEATED_ERROR_LOG_MS } from '../../src/log.js';
import { closeConnection, latestProposal, startSender, type ApprovalTerms, type Sender } from '../../src/interlock.js';
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

describe('a 429 storm: one log line per fault, and recovery waits out the pause', () => {
  it('refund POSTs answered 429 without Retry-After: the workers log the pause once, a pass during it sends nothing, and a pass after it stops at its first 429', async () => {
    // A pause longer than the test: every count below is made inside it, none depends on how fast the machine is.
    const pauseMs = 60_000;
    const pipeline: Pipeline = await openPipeline(world.sandbox, { config: { rateLimitBackoffMs: pauseMs } });
    const lines: { msg: string; notLogged?: number }[] = [];
    pipeline.stores.logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string }) });
    const connection = pipeline.stores.queueConnection();
    const effects = new Queue(pipeline.stores.queues.effects, { connection, prefix: pipeline.stores.bullmq.prefix });
    const refundPosts = async (after: number) => (await world.sandbox.control.requests(after)).filter((request) => request.method === 'POST' && request.path === '/v1/refunds' && request.status === 429).length;
    const mark = async () => (await world.sandbox.control.requests()).at(-1)?.seq ?? 0;
    const count = (message: RegExp) => lines.filter((line) => message.test(line.msg)).length;
    let sender: Sender | null = null;
    let worker: EffectsWorker | null = null;
    let recovery: Recovery | null = null;
    try {
      const payments = await Promise.all(Array.from({ length: REFUNDS }, () => pay(world.stripe, 'pm_card_visa', 5_000)));
      const effectIds: string[] = [];
      for (const [i, payment] of payments.entries()) {
        const terms: ApprovalTerms = { id: `ap_storm_${i}_${pipeline.config.keyPrefix}`, approver: 'dana@support', capCents: 2_000, expiresAt: Date.now() + 3_600_000, maxUses: 1, scope: `payment:${payment.paymentIntent}` };
        await pipeline.stores.approvals.grant(terms);
        effectIds.push(await pipeline.propose({ requestId: `case-storm-${pipeline.config.keyPrefix}-${i}`, approval: terms.id, effect: { kind: 'refund', paymentIntent: payment.paymentIntent, amount: 2_000 } }));
      }
      await world.sandbox.control.failNext({ path: '/v1/refunds', method: 'POST', status: 429, type: 'rate_limit_error', code: 'rate_limit', message: 'Too many requests hit the API too quickly.', count: 100_000 });
      sender = await startSender(pipeline.stores, pipeline.stripe.target);
      // Every effect dispatched and sent once, each send answered 429: the claims stay, each effect waits for a resend.
      let since = await mark();
      for (const effectId of effectIds) {
        const proposal = await latestProposal(pipeline.stores, effectId);
        expect((await sender.gate.submit(proposal, { recorded: true })).slowDown).toBeDefined();
      }
      expect(await refundPosts(since)).toBe(REFUNDS);

      // The effects worker: the jobs it takes before the pause resend once each and are put back; the pause outlasts the test.
      since = await mark();
      const from = lines.length;
      const startedAt = Date.now();
      worker = startEffectsWorker(pipeline.stores, sender, { concurrency: REFUNDS, rateLimitBackoffMs: pauseMs });
      await until(async () => (await effects.getRateLimitTtl(Number.MAX_SAFE_INTEGER)) > 0 && (await effects.getActiveCount()) === 0);
      await worker.close();
      worker = null;
      const resentByJobs = await refundPosts(since);
      expect(resentByJobs).toBeGreaterThan(0);
      expect(resentByJobs).toBeLessThanOrEqual(REFUNDS);
      const jobLines = lines.slice(from);
      // One line per REPEATED_ERROR_LOG_MS at most, each with a count; none per job, none per resend.
      expect(jobLines.filter((line) => /^Stripe rate-limited a call/.test(line.msg)).length, JSON.stringify(jobLines)).toBeLessThanOrEqual(1 + Math.floor((Date.now() - startedAt) / REPEATED_ERROR_LOG_MS));
      expect(jobLines.filter((line) => /^Stripe rate-limited a call/.test(line.msg)).length).toBeGreaterThan(0);
      expect(count(/resend outcome unknown/), JSON.stringify(jobLines)).toBe(0);

      // Recovery during the pause: its pass at start and a pass asked for send nothing, however many claims wait.
      since = await mark();
      recovery = startRecovery(pipeline.stores, sender, { safetyIntervalMs: 3_600_000 });
      await recovery.started;
      const during = await recovery.pass();
      expect(await refundPosts(since)).toBe(0);
      expect(during.nextAt).not.toBeNull();

      // The pause over (lifted by hand): a pass resends its first effect, meets the 429, pauses every worker again
      // and leaves the others for the pass at the pause's end.
      await effects.removeRateLimitKey();
      since = await mark();
      const linesBefore = lines.length;
      const after = await recovery.pass();
      expect(await refundPosts(since)).toBe(1);
      expect(after.unresolved).toHaveLength(1);
      expect(after.skipped.filter((item) => /rate-limited this pass/.test(item.reason))).toHaveLength(REFUNDS - 1);
      expect(await effects.getRateLimitTtl(Number.MAX_SAFE_INTEGER)).toBeGreaterThan(pauseMs / 2);
      const passLines = lines.slice(linesBefore);
      expect(passLines.map((line) => line.msg), JSON.stringify(passLines)).toEqual([expect.stringMatching(/^Stripe rate-limited a recovery pass/)]);

      // The limit lifts: every refund lands exactly once, under the key of its first send.
      await world.sandbox.control.clearFaults();
      await effects.removeRateLimitKey();
      worker = startEffectsWorker(pipeline.stores, sender, { concurrency: REFUNDS, rateLimitBackoffMs: pauseMs });
      const settled = await pipeline.untilSettled(effectIds, 30_000);
      for (const [i, payment] of payments.entries()) {
        const effectId = effectIds[i] ?? '';
        expect(settled.get(effectId)?.outcome).toBe('COMMITTED_BY_RETRY');
        const refunds = (await world.stripe.refunds.list({ payment_intent: payment.paymentIntent })).data;
        expect(refunds.map((refund) => [refund.amount, refund.status, refund.metadata?.['interlock_effect_id']])).toEqual([[2_000, 'succeeded', effectId]]);
      }
    } finally {
      await world.sandbox.control.clearFaults();
      await recovery?.close();
      await worker?.close(true);
      await effects.close();
      await closeConnection(connection);
      await sender?.close();
      await pipeline.close();
    }
  }, 60_000);
});

/** Polls until `done` answers true (20 s at most). */
async function until(done: () => Promise<boolean>): Promise<void> {
  const giveUpAt = Date.now() + 20_000;
  while (!(await done())) {
    if (Date.now() > giveUpAt) throw new Error('the condition did not come about within 20 s');
    await sleep(20);
  }
}
