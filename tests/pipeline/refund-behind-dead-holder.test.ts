// Rule: a refund held behind another refund on its payment (REFUNDS_HOLD) whose worker died at its send recovers
// that holder once its death is proven, as a job recovers its own effect found in flight with a dead owner (DESIGN §7).
// It only read the hold: it waited a whole send timeout, answered IN_FLIGHT, waited again, and was settled only once
// the 60 s safety pass had recovered the holder, holding a worker slot most of that time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEffectsWorker, type EffectsWorker } from '../../queues/effects.js';
import { startRecovery, type Recovery } from '../../queues/recovery.js';
import { REFUND_FACTS, effectIdFor, startSender, type Sender } from '../../src/interlock.js';
import { openPipeline, spawnWorker, type Pipeline, type WorkerProcess } from './pipeline-support.js';
import { startStripeWorld, pay, sleep, type StripeWorld } from '../stripe/stripe-support.js';

let world: StripeWorld;
let pipeline: Pipeline;
let dying: WorkerProcess | null = null;
let sender: Sender | null = null;
let recovery: Recovery | null = null;
let worker: EffectsWorker | null = null;

beforeAll(async () => {
  world = await startStripeWorld();
  pipeline = await openPipeline(world.sandbox);
}, 60_000);
afterAll(async () => {
  await dying?.stop().catch(() => undefined);
  await worker?.close(true).catch(() => undefined);
  await recovery?.close().catch(() => undefined);
  await sender?.close().catch(() => undefined);
  await pipeline?.close();
  await world?.close();
}, 60_000);

describe('a refund held behind a refund whose worker died mid-send', () => {
  it('is settled soon after the holder is proven dead, not after the 60 s safety net', async () => {
    const { paymentIntent } = await pay(world.stripe, 'pm_card_visa', 10_000);
    const effect = { kind: 'refund' as const, paymentIntent, amount: 4_000, reason: 'requested_by_customer' as const };
    const [ap1, ap2] = [`ap_h_${Date.now()}`, `ap_j_${Date.now()}`];
    for (const id of [ap1, ap2]) await pipeline.stores.approvals.grant({ id, approver: 'alex', capCents: 5_000, scope: `payment:${paymentIntent}`, expiresAt: Date.now() + 3_600_000, maxUses: 5 });
    // Both tickets decided on what Stripe shows now: nobody refunded.
    const premises = await pipeline.stripe.target.readFacts(effectIdFor({ requestId: 'x', effect }), effect, REFUND_FACTS, { timeoutMs: 5_000 });
    expect(premises).toMatchObject({ refunded_by_others: 0 });

    // A second worker (this process) runs, with its recovery (safety timer at its default), before the first dies.
    const jId = effectIdFor({ requestId: `ticket-j-${paymentIntent}`, effect });
    sender = await startSender(pipeline.stores, pipeline.stripe.target, { workerId: 'survivor' });
    recovery = startRecovery(pipeline.stores, sender, {});
    await recovery.started;

    // Worker 1 (a real process) takes the first refund, sends it and is SIGKILLed right before the send (nothing landed).
    dying = spawnWorker(pipeline.env({ INTERLOCK_CRASH_AT: 'before_send' }));
    await dying.ready;
    const h = await pipeline.propose({ requestId: `ticket-h-${paymentIntent}`, approval: ap1, effect, premises });
    const death = await Promise.race([dying.exited, sleep(40_000).then(() => ({ code: null, signal: 'TIMEOUT' as never }))]);
    expect(death.signal).toBe('SIGKILL');
    dying = null;
    expect(await pipeline.stores.journal.onceHolder(`payment:${paymentIntent}`, 'refunds')).toBe(h);

    // The survivor's effects worker now takes the second ticket's job.
    worker = startEffectsWorker(pipeline.stores, sender, { concurrency: 4 });
    await worker.adopting;
    const proposedAt = Date.now();
    const j = await pipeline.propose({ requestId: `ticket-j-${paymentIntent}`, approval: ap2, effect, premises });
    expect(j).toBe(jId);
    const jDone = await pipeline.untilSettled([j], 120_000);
    const tookMs = Date.now() - proposedAt;
    const settled = new Map([...jDone, ...(await pipeline.untilSettled([h], 120_000))]);
    const refunds = (await world.stripe.refunds.list({ payment_intent: paymentIntent })).data;
    expect(refunds.length).toBe(1);
    expect(settled.get(j)?.outcome).toBe('REFUSED:stale_premise');
    // The holder's death is proven within the heartbeat TTL (4 s by default); a worker that meets it recovers it then,
    // not at the safety pass a minute later (a bound of a third of that, for a loaded machine).
    expect(tookMs).toBeLessThan(20_000);
    expect(settled.get(h)?.outcome).toBe('COMMITTED_BY_RETRY');
  }, 200_000);
});
