// Rule: a refund that failed while its effect was in flight raises `failed_after_landed` seconds after the effect
// commits, whichever event first recorded the failure (DESIGN §8). charge.refunded recorded it without marking the
// payment (note-fact-1), so the commit did not re-read the effect's facts, the later refund.failed found the fact
// recorded already, and the alert waited for the reconciler's next pass (15 minutes by default).
// Changed expectation: while the dispatch is open, no event records the refund on the effect (refund.created and
// charge.refunded used to append it as they came): its id and amount do not tell the send's refund from one made by
// hand with them (src/facts/apply.ts holdInFlight). Each marks the payment, and the settle's re-read records the
// failure right after the commit (DISPATCHED, COMMITTED, OBSERVED): nothing is lost, its cents go back to the
// approval once, and the alert is raised once, seconds after the commit.
import { describe, expect, it } from 'vitest';
import type Stripe from 'stripe';
import { createFacts, type StripeEvent, type StripeReader } from '../../src/interlock.js';
import type { RefundFact } from '../../src/core/post-send.js';
import { pay, sharedFactsRig, waitFor } from './facts-rig.js';

const rig = sharedFactsRig();

/**
 * A facts reader that reads the payment's refunds through its charge (GET /v1/charges/{id}?expand[]=refunds), so it
 * still answers while the sandbox fails GET /v1/refunds to keep the gate's lookup (and so the effect's dispatch) open.
 */
function readerThroughCharge(stripe: Stripe, charge: string): StripeReader {
  const list = async (): Promise<RefundFact[]> => {
    const read = await stripe.charges.retrieve(charge, { expand: ['refunds'] });
    return (read.refunds?.data ?? []).map((refund) => ({
      id: refund.id, status: refund.status ?? 'unknown', amount: refund.amount, charge, paymentIntent: typeof refund.payment_intent === 'string' ? refund.payment_intent : null,
      failureReason: refund.failure_reason ?? null, effectId: refund.metadata?.['interlock_effect_id'] ?? null, created: refund.created,
    }));
  };
  return {
    refund: async (id) => (await list()).find((refund) => refund.id === id) ?? null,
    refundsOf: async () => list(),
    disputesOf: async () => [],
    creditsOf: async () => [],
  };
}

const eventOf = async (type: string, match: (object: Record<string, unknown>) => boolean) =>
  waitFor(type, async () => (await rig.stripe.events.list({ type, limit: 100 })).data.find((event) => match(event.data.object as unknown as Record<string, unknown>)));

describe('a refund that fails while its effect is in flight, its failure first seen through charge.refunded', () => {
  it('raises failed_after_landed seconds after the effect commits', async () => {
    await rig.stopFactsWorker();
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    await rig.sandbox.control.idle();
    // The send lands at Stripe but its answer is lost, and the gate's lookup fails: the dispatch stays open.
    await rig.sandbox.control.dropNext({ path: '/v1/refunds', method: 'POST', when: 'after', count: 100_000 });
    await rig.sandbox.control.failNext({ path: '/v1/refunds', method: 'GET', status: 500, count: 100_000 });
    const effectId = await rig.submit({ kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer' });
    const created = await eventOf('refund.created', (object) => object.payment_intent === paymentIntent);
    const refundId = (created.data.object as { id: string }).id;
    const chargeRefunded = await eventOf('charge.refunded', (object) => object.id === charge);

    // The facts worker, behind on its queue, reads the refund (and the charge's refunds) as they are when it gets to them.
    const facts = createFacts(rig.stores, readerThroughCharge(rig.stripe, charge));
    await facts.applyEvent(JSON.parse(JSON.stringify(created)) as StripeEvent);
    await rig.sandbox.control.request('POST', `/refunds/${refundId}/fail`, { failure_reason: 'expired_or_canceled_card' });
    const failed = await eventOf('refund.failed', (object) => object.id === refundId);
    // charge.refunded (queued when the refund was made) is applied now: it reads the refund failed, while the effect is
    // open, and records nothing yet.
    expect(await facts.applyEvent(JSON.parse(JSON.stringify(chargeRefunded)) as StripeEvent)).toEqual([]);
    const kinds = async () => ((await rig.stores.journal.receipt(effectId))?.entries ?? []).map((entry) => entry.kind);
    expect((await kinds()).slice(-1)).toEqual(['DISPATCHED']);

    await rig.sandbox.control.clearFaults();
    const answer = await rig.effects.waitFor(effectId, 30_000);
    expect(answer?.outcome).toMatch(/^COMMITTED/);
    // The settle's re-read records the failure and raises the alert; before the fix: no failed_after_landed alert until
    // the reconciler's next pass (15 min by default).
    const alert = await waitFor('the failed_after_landed alert', async () => (await rig.stores.alerts.list()).find((one) => one.effectId === effectId && one.kind === 'failed_after_landed') ?? null, 5_000).catch(() => null);
    expect(alert, 'failed_after_landed alert raised').not.toBeNull();
    expect((await kinds()).slice(2, 5)).toEqual(['DISPATCHED', 'COMMITTED', 'OBSERVED']);
    // refund.failed comes after the commit: its fact is recorded already, and nothing is given back or alerted twice.
    await facts.applyEvent(JSON.parse(JSON.stringify(failed)) as StripeEvent);
    const verification = await rig.receipt(effectId);
    expect({ answer: verification.answer, finalMoney: verification.finalMoney.status }).toEqual({ answer: 'returned', finalMoney: 'not_returned' });
    expect((await rig.observed(effectId)).filter((entry) => entry.objectId === refundId).map((entry) => entry.status)).toEqual(['failed']);
    const partition = `payment:${paymentIntent}`;
    expect((await rig.stores.journal.readState(partition, effectId)).state.failedReleased).toBe(true);
    expect((await rig.stores.alerts.list()).filter((one) => one.effectId === effectId && one.kind === 'failed_after_landed')).toHaveLength(1);
  }, 90_000);
});
