// A facts job that fails for good (Stripe refused its re-read while a key was being rotated, or its retries ran out in
// an outage) leaves its event's facts unrecorded, and Stripe, answered 200 at the delivery, never sends it again. The
// reconciler re-reads only effects bound or settled within its horizon (3 days), and a chargeback comes weeks after
// its refund. The rule: the effects a failed-for-good event concerns go on the reconciler's watch list from the
// failure on, so its next pass re-reads them, records the chargeback and raises the alert it calls for, however old the
// refund.
import { describe, expect, it } from 'vitest';
import { reconcile } from '../../queues/facts.js';
import { watchedEffects, type StripeEvent } from '../../src/interlock.js';
import { sleep } from '../support/harness.js';
import { pay, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

const DAY_MS = 86_400_000;

describe('a facts job that failed for good', () => {
  it("puts the effects its event concerns on the reconciler's watch list: a refund bound 30 days ago gets its chargeback and its alert at the next pass", async () => {
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    await rig.sandbox.control.idle();
    await rig.drained();
    const { keys } = rig.stores;
    // The refund was made a month ago: its binding and its settle sit 30 days back in the indexes the reconciler reads.
    const now = await rig.stores.journal.serverTime();
    const monthAgo = now - 30 * DAY_MS;
    expect(await rig.redis.zscore(keys.effectsByTime, effectId)).not.toBeNull();
    await rig.redis.zadd(keys.effectsByTime, monthAgo, effectId);
    if ((await rig.redis.zscore(keys.watch, effectId)) !== null) await rig.redis.zadd(keys.watch, monthAgo, effectId);
    expect((await watchedEffects(rig.stores, now - 3 * DAY_MS)).effectIds).not.toContain(effectId);

    // Every read is refused for a while (a key rotation): the dispute's job fails for good.
    await rig.sandbox.control.failNext({ method: 'GET', status: 401, count: 100_000 });
    const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
    await rig.sandbox.control.idle();
    for (let i = 0; i < 200 && (await rig.factsQueue.queue.getJobCounts('failed')).failed === 0; i += 1) await sleep(50);
    for (let i = 0; i < 100 && Number(await rig.redis.zscore(keys.watch, effectId)) < now; i += 1) await sleep(50);
    await rig.sandbox.control.clearFaults();
    expect((await rig.receipt(effectId)).finalMoney.disputes).toEqual([]);
    expect(Number(await rig.redis.zscore(keys.watch, effectId))).toBeGreaterThanOrEqual(now);

    // The next scheduled pass looks back its 3 days: it finds the month-old refund through the watch list.
    const report = await reconcile(rig.stores, rig.facts, (await rig.stores.journal.serverTime()) - 3 * DAY_MS);
    expect(report.unread).toBe(0);
    const verification = await rig.receipt(effectId);
    expect(verification.finalMoney.disputes.map((one) => one.id)).toContain(dispute.id);
    // The chargeback failed the refund (still pending) or took the money beside it: either way a person is told.
    const raised = (await rig.stores.alerts.list()).filter((alert) => alert.effectId === effectId && alert.resolvedAt === null);
    expect(raised.map((alert) => alert.kind)).toEqual([expect.stringMatching(/^(failed_after_landed|exposure)$/)]);
    expect(raised[0]?.disputes).toContain(dispute.id);
    expect(report.alerts).toEqual([raised[0]?.id]);
  }, 60_000);

  it('finds the effects an event concerns from the event and the journal alone: a refund by its metadata, a payment or customer by what committed on it', async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 1_000);
    const event = (type: string, object: Record<string, unknown>) => ({ id: `evt_${type}`, type, created: 0, data: { object } }) as unknown as StripeEvent;
    const refund = (effect: string) => ({ object: 'refund', id: 're_x', status: 'failed', amount: 1_000, payment_intent: paymentIntent, metadata: { interlock_effect_id: effect } });
    const [named, unknown, charge, disputed, elsewhere, ignored] = await Promise.all([
      rig.facts.concerned(event('refund.failed', refund(effectId))),
      rig.facts.concerned(event('refund.failed', refund('f'.repeat(64)))),
      rig.facts.concerned(event('charge.refunded', { object: 'charge', id: 'ch_x', payment_intent: paymentIntent })),
      rig.facts.concerned(event('charge.dispute.created', { object: 'dispute', id: 'du_x', status: 'needs_response', amount: 10_000, payment_intent: paymentIntent })),
      rig.facts.concerned(event('charge.dispute.created', { object: 'dispute', id: 'du_y', status: 'needs_response', amount: 10_000, payment_intent: 'pi_never_seen' })),
      rig.facts.concerned(event('invoice.paid', { object: 'invoice', id: 'in_x', customer: 'cus_x' })),
    ]);
    expect({ named, unknown, charge, disputed, elsewhere, ignored }).toEqual({ named: [effectId], unknown: [], charge: [effectId], disputed: [effectId], elsewhere: [], ignored: [] });
  }, 60_000);
});
