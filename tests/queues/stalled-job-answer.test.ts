// Rule: at most one refund reaches Stripe per approved request, and whoever waits on the request hears what happened
// to it: a job BullMQ hands out again after a stall while its first run is still sending must not turn the request's
// own COMMITTED into DUPLICATE_IGNORED ("already carried out; nothing was sent again"). And one settlement is one
// settling answer: the worker's onAnswer feeds interlock_effects_total by outcome and the dispatch-to-settle histogram,
// so the run that found the effect settled must not be counted as a second COMMITTED.
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createEffectsQueue, startEffectsWorker, type EffectAnswer } from '../../queues/effects.js';
import { openStores, settledOutcome, startSender, type Stores, type Sender } from '../../src/interlock.js';
import { createRefundTarget, REFUND_FACTS } from '../../src/stripe/refund-target.js';
import { approvalTerms, testConfig, testKey } from '../support/harness.js';
import { pay, sleep, startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';

let world: StripeWorld;
const prefix = `t-stall-${Math.random().toString(36).slice(2, 8)}`;
const config = testConfig({ keyPrefix: prefix, sendTimeoutMs: 5_000, claimTtlMs: 8_000, settleMarginMs: 200, heartbeatMs: 100, heartbeatTtlMs: 500, dedupMarginMs: 20_000 });
let stores: Stores;
let sender: Sender;

beforeAll(async () => {
  world = await startStripeWorld();
  stores = await openStores(config, { logger: pino({ level: process.env.RV_LOG ?? 'silent' }), signingKey: testKey().key });
  sender = await startSender(stores, createRefundTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs }));
});
afterAll(async () => {
  await sender?.close();
  await stores?.close();
  await world.close();
  const redis = new Redis(config.redisUrl);
  for (const pattern of [`${prefix}:*`, `{${prefix}-queues}:*`]) {
    const stale = await redis.keys(pattern);
    if (stale.length > 0) await redis.del(...stale);
  }
  await redis.quit();
});

it('a job stalled and handed out again while its first run is still sending: one refund, the waiter hears COMMITTED, counted once', async () => {
  const queue = createEffectsQueue(stores);
  const settling: string[] = [];
  const worker = startEffectsWorker(stores, sender, {
    concurrency: 4,
    onAnswer: (answer) => {
      settling.push(answer.outcome);
    },
  });
  const answers: EffectAnswer[] = [];
  const checker = new Worker(stores.queues.effects, null, { connection: new Redis(config.redisUrl, { maxRetriesPerRequest: null }), ...stores.bullmq, autorun: false });
  try {
    await worker.adopting;
    const { paymentIntent } = await pay(world.stripe);
    const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 2_000 });
    await stores.approvals.grant(terms);
    const effect = { kind: 'refund' as const, paymentIntent, amount: 2_000 };
    const premises = await createRefundTarget(world.client).readFacts('0'.repeat(64), effect, REFUND_FACTS, { timeoutMs: 2_000 });
    // Stripe takes 2.5 s over the refund (it lands, and the answer comes back in time).
    await world.sandbox.control.slowDown({ path: '/v1/refunds', method: 'POST', ms: 2_500, count: 1 });
    const proposed = await queue.propose({ requestId: `case-stall-${paymentIntent}`, agent: 'support-bot', approval: terms.id, premises, effect });
    const waiting = queue.waitFor(proposed.effectId, 20_000).then((answer) => {
      if (answer !== null) answers.push(answer);
      return answer;
    });
    // The job is being sent; its worker's lock is lost (as after a long GC pause or a Redis blip), and the stall
    // checker hands the job out again while the first run is still waiting on Stripe.
    await sleep(700);
    const lockKey = `${queue.queue.toKey(proposed.effectId)}:lock`;
    const redis = new Redis(config.redisUrl);
    const stalledCheck = queue.queue.toKey('stalled-check');
    await redis.del(lockKey, stalledCheck);
    await (checker as unknown as { moveStalledJobsToWait(): Promise<void> }).moveStalledJobsToWait();
    await redis.del(lockKey, stalledCheck);
    await (checker as unknown as { moveStalledJobsToWait(): Promise<void> }).moveStalledJobsToWait();
    await redis.quit();

    const answer = await waiting;
    const refunds = (await world.stripe.refunds.list({ payment_intent: paymentIntent })).data;
    expect(refunds, 'refunds at Stripe').toHaveLength(1);
    // The journal says this request's send committed it (a waiter that asks after the fact hears COMMITTED).
    expect(await settledOutcome(stores, proposed.effectId)).toBe('COMMITTED');
    expect(answer?.outcome, 'what the one caller of this request hears').toBe('COMMITTED');
    // The run again answers after the first (its delay): both runs have handed onAnswer what they did by then.
    const giveUp = Date.now() + 10_000;
    while (settling.length < 2 && Date.now() < giveUp) await sleep(50);
    expect(settling.filter((outcome) => outcome === 'COMMITTED'), `answers handed to onAnswer: ${settling.join(', ')}`).toHaveLength(1);
  } finally {
    await checker.close();
    await worker.close(true);
    await queue.close();
  }
});
