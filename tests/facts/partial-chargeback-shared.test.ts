// Rule: a partial chargeback is counted once across the receipts on its payment (README "Post-send facts"; review of
// post-send facts): the facts worker records the refunds on a charged-back charge (the gate's for every effect and
// those made by hand, as the charge lists them) on every receipt on the payment, and the receipts share what the
// refunds and the chargeback returned twice, the newest refund first. Their exposures and exposure alerts add up to at
// most that overlap, a refund made by hand takes its share (no gated receipt claims it), and each exposure names the
// payment's overlap beside its share. Before, each receipt claimed the whole overlap up to its own refund.
import { describe, expect, it } from 'vitest';
import { createFacts, stripeSide, type StripeReader } from '../../src/interlock.js';
import { pay, sharedFactsRig } from './facts-rig.js';

// Only the re-reads below record facts.
const rig = sharedFactsRig({ forward: false });

describe('a partial chargeback on a charge with two gated refunds and one made by hand', () => {
  it("is shared among the refunds, the newest first, and counted once across the receipts", async () => {
    await rig.sandbox.control.configure({ pending_refund_dispute_window_seconds: 0 });
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    // Made seconds apart (Stripe's `created` orders them): the gated 2000, the gated 2000, then 1000 by hand.
    const first = await rig.refund(paymentIntent, 2_000);
    await rig.sandbox.control.advanceClock(5);
    const second = await rig.refund(paymentIntent, 2_000);
    await rig.sandbox.control.advanceClock(5);
    await rig.stripe.refunds.create({ payment_intent: paymentIntent, amount: 1_000 });
    await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
    // The sandbox disputes the whole charge; the issuer here disputes 9000 of it (the project's own reader over the
    // sandbox, only the dispute's amount changed, as tests/facts/partial-dispute-exposure does).
    const real = stripeSide(rig.config).reader;
    const reader: StripeReader = { ...real, disputesOf: async (pi) => (await real.disputesOf(pi)).map((found) => ({ ...found, amount: 9_000 })) };
    const facts = createFacts(rig.stores, reader);
    await facts.reread(first);
    await facts.reread(second);

    // Stripe: 10000 paid, 5000 refunded and 9000 charged back: 4000 returned twice. Newest first: 1000 with the refund
    // made by hand, 2000 with the second gated refund, 1000 with the first.
    const stripeCharge = await rig.stripe.charges.retrieve(charge);
    expect(stripeCharge.amount_refunded + 9_000 - stripeCharge.amount).toBe(4_000);
    const [a, b] = [await rig.receipt(first), await rig.receipt(second)];
    expect(a.exposure).toMatchObject({ cents: 1_000, paymentTwiceCents: 4_000, newerCents: 3_000, refundedCents: 5_000 });
    expect(b.exposure).toMatchObject({ cents: 2_000, paymentTwiceCents: 4_000, newerCents: 1_000, refundedCents: 5_000 });
    const alerts = [await rig.stores.alerts.get(`exposure:${first}`), await rig.stores.alerts.get(`exposure:${second}`)];
    expect(alerts.map((alert) => alert?.centsAtStake)).toEqual([1_000, 2_000]);
    // The receipts' shares add up to what Stripe returned twice less the hand-made refund's share, never more.
    expect((a.exposure?.cents ?? 0) + (b.exposure?.cents ?? 0)).toBe(3_000);
  });
});
