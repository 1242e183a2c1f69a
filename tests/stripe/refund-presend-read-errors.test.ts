// Rule: the refund target's own pre-send read (apply's check that the refund still fits, made when the gate read no
// refund premise right before) sends nothing when it fails, and its error goes with the fenced send (SendResult
// `cause`): a 429 slows down as one on a premise read, a lookup or a send does (README "Rate limits": the effects
// queue pauses for Stripe's Retry-After), and a 401/403 is the configuration error it is (target_misconfigured, naming
// the key), not a send in flight. The gate's answer says plainly that nothing was sent, never that the outcome is
// unknown.
import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { startEffectsWorker, type EffectsWorker } from '../../queues/effects.js';
import type { Config } from '../../src/config.js';
import { errorCode, slowDownOf } from '../../src/core/errors.js';
import { SendFenced } from '../../src/core/target.js';
import { startSender, type ApprovalTerms, type Sender } from '../../src/interlock.js';
import { openPipeline } from '../pipeline/pipeline-support.js';
import { approvalTerms } from '../support/harness.js';
import { callsSince, effectIdFor, gateOnStripe, mark, pay, sendContext, sleep } from './stripe-support.js';

const TIMING: Partial<Config> = { sendTimeoutMs: 1_000, settleMarginMs: 150, claimTtlMs: 2_500, heartbeatMs: 100, heartbeatTtlMs: 500 };
const RATE_LIMITED = { path: '/v1/payment_intents', method: 'GET', status: 429, type: 'rate_limit_error', code: 'rate_limit', message: 'Too many requests hit the API too quickly.', retry_after: 30 } as const;
const KEY_REFUSED = { path: '/v1/payment_intents', method: 'GET', status: 401, type: 'authentication_error', message: 'Invalid API Key provided: sk_test_****0001' } as const;

const { world, node, target } = gateOnStripe(TIMING);

const refund = (paymentIntent: string) => ({ kind: 'refund' as const, paymentIntent, amount: 2_000 });
const posts = async (since: number) => (await callsSince(world.sandbox, since)).filter((call) => call.startsWith('POST'));

describe('apply, when its own read of the payment fails', () => {
  it('a 429: fenced (nothing sent), carrying the read\'s Retry-After', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.sandbox.control.failNext({ ...RATE_LIMITED, count: 1 });
    const since = await mark(world.sandbox);
    // No premise read before it (attempt null): apply reads the payment itself.
    const error = await target.apply(effectIdFor('limited'), refund(paymentIntent), sendContext(2_000, { attempt: null })).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(SendFenced);
    expect(slowDownOf(error)).toEqual({ retryAfterMs: 30_000 });
    expect(await posts(since)).toEqual([]);
  });

  it('a 401: fenced (nothing sent), carrying the configuration error that names the key', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.sandbox.control.failNext({ ...KEY_REFUSED, count: 1 });
    const error = await target.apply(effectIdFor('key'), refund(paymentIntent), sendContext(2_000, { attempt: null })).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(SendFenced);
    expect(errorCode((error as Error).cause)).toBe('target_misconfigured');
  });
});

describe('through the gate: a submit decided without refund premises, whose pre-send read Stripe limits or refuses', () => {
  async function submit(fault: typeof RATE_LIMITED | typeof KEY_REFUSED): Promise<{ answer: unknown; posts: string[] }> {
    const { paymentIntent } = await pay(world.stripe);
    const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 10_000 });
    await node.approvals.grant(terms);
    await world.sandbox.control.failNext({ ...fault, count: 1 });
    const since = await mark(world.sandbox);
    try {
      const answer = await node.gate.submit({ requestId: `case-${paymentIntent}`, agent: 'support-bot', approval: terms.id, premises: {}, effect: refund(paymentIntent) }).catch((error: unknown) => error);
      return { answer, posts: await posts(since) };
    } finally {
      await world.sandbox.control.clearFaults();
    }
  }

  it('a 429 with Retry-After: 30 answers IN_FLIGHT with that slow-down, saying nothing was sent', async () => {
    const { answer, posts: sent } = await submit(RATE_LIMITED);
    expect(answer).toMatchObject({ outcome: 'IN_FLIGHT', slowDown: { retryAfterMs: 30_000 } });
    const reason = (answer as { reason?: string }).reason ?? '';
    expect(reason).toMatch(/^nothing was sent: /);
    expect(reason).not.toContain('outcome is unknown');
    expect(sent).toEqual([]);
  });

  // Rule: recovery's resend whose own pre-send read is rate-limited pauses the passes for that Retry-After too (the
  // effect is looked at again once the pause ends: its retryAt), as a 429 on the resend does.
  it('a recovery resend whose pre-send read gets a 429 pauses for its Retry-After', async () => {
    const { answer } = await submit(RATE_LIMITED);
    const { effectId } = answer as { effectId: string };
    await world.sandbox.control.failNext({ ...RATE_LIMITED, count: 5 });
    try {
      let unresolved: Array<{ outcome: string; retryAt?: number }> = [];
      for (let pass = 0; pass < 20 && unresolved.length === 0; pass += 1) {
        unresolved = (await node.gate.recover({ only: [effectId] })).unresolved;
        if (unresolved.length === 0) await sleep(100);
      }
      expect(unresolved).toMatchObject([{ outcome: 'UNRESOLVED:fenced' }]);
      expect(unresolved[0]?.retryAt ?? 0).toBeGreaterThan(Date.now() + 20_000);
    } finally {
      await world.sandbox.control.clearFaults();
    }
  });

  it('a 401 is a configuration error naming the key (target_misconfigured), not a send in flight', async () => {
    const { answer, posts: sent } = await submit(KEY_REFUSED);
    expect(answer).toMatchObject({ code: 'target_misconfigured' });
    expect((answer as Error).message).toContain('STRIPE_SECRET_KEY');
    expect(sent).toEqual([]);
  });
});

describe('the effects queue', () => {
  it('pauses for the Retry-After of a 429 on the pre-send read', async () => {
    const pipeline = await openPipeline(world.sandbox);
    const effects = new Queue(pipeline.stores.queues.effects, { connection: pipeline.stores.queueConnection(), prefix: pipeline.stores.bullmq.prefix });
    let sender: Sender | null = null;
    let worker: EffectsWorker | null = null;
    try {
      const payment = await pay(world.stripe, 'pm_card_visa', 5_000);
      const terms: ApprovalTerms = { id: `ap_presend_${pipeline.config.keyPrefix}`, approver: 'dana@support', capCents: 2_000, expiresAt: Date.now() + 3_600_000, maxUses: 1, scope: `payment:${payment.paymentIntent}` };
      await pipeline.stores.approvals.grant(terms);
      // Decided without refund premises: the gate reads nothing before the send, so apply reads the payment itself.
      await pipeline.propose({ requestId: `case-presend-${pipeline.config.keyPrefix}`, approval: terms.id, effect: refund(payment.paymentIntent), premises: {} });
      await world.sandbox.control.failNext({ ...RATE_LIMITED, count: 100_000 });
      const since = await mark(world.sandbox);
      sender = await startSender(pipeline.stores, pipeline.stripe.target);
      worker = startEffectsWorker(pipeline.stores, sender, { concurrency: 1, rateLimitBackoffMs: 1_000 });
      let limited = 0;
      for (let i = 0; i < 100 && limited === 0; i += 1) {
        limited = (await world.sandbox.control.requests(since)).filter((request) => request.status === 429).length;
        if (limited === 0) await sleep(50);
      }
      expect(limited).toBeGreaterThan(0);
      let pausedFor = 0;
      for (let i = 0; i < 100 && pausedFor <= 0; i += 1) {
        pausedFor = await effects.getRateLimitTtl(Number.MAX_SAFE_INTEGER);
        if (pausedFor <= 0) await sleep(50);
      }
      // Paused for Stripe's 30 s, not the 1 s backoff used when Stripe names no wait.
      expect(pausedFor).toBeGreaterThan(5_000);
      expect(await posts(since)).toEqual([]);
    } finally {
      await world.sandbox.control.clearFaults();
      await worker?.close(true);
      await sender?.close();
      await effects.close();
      await pipeline.close();
    }
  }, 30_000);
});
