// Rule: a chargeback returns money twice only where it overlaps the refunds on its charge. The facts worker records a
// chargeback with its charge's amount and what is refunded on it (read at Stripe with it), so the receipt can tell: a
// chargeback of only the part of a partly refunded charge no refund returned (issuers dispute what is left; Stripe:
// dispute.amount "can differ ... because only part of the order is disputed") is no exposure and raises no alert,
// and a chargeback of the whole charge puts the refund at stake, not the refund plus the chargeback.
import { describe, expect, it } from 'vitest';
import { createFacts, stripeSide, type StripeReader } from '../../src/interlock.js';
import { pay, sharedFactsRig } from './facts-rig.js';

// The sandbox's events are not forwarded: only the re-reads below record facts.
const rig = sharedFactsRig({ forward: false });

/** A 10000-cent payment with a gated 2000-cent refund, then a lost chargeback of the charge; the effect's id. */
async function refundedThenChargedBack(): Promise<string> {
  await rig.sandbox.control.configure({ pending_refund_dispute_window_seconds: 0 });
  const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
  const effectId = await rig.refund(paymentIntent, 2_000);
  const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
  await rig.stripe.disputes.close(dispute.id);
  return effectId;
}

describe('a chargeback weighed against the refunds on its charge', () => {
  it('of only the unrefunded remainder of a partly refunded charge, is no exposure and raises no alert', async () => {
    const effectId = await refundedThenChargedBack();
    // The sandbox always disputes the whole charge; an issuer disputes the part not yet refunded (8000 of 10000). The
    // project's own reader over the sandbox, with only the dispute's amount changed to that.
    const real = stripeSide(rig.config).reader;
    const reader: StripeReader = { ...real, disputesOf: async (pi) => (await real.disputesOf(pi)).map((found) => ({ ...found, amount: 8_000 })) };
    await createFacts(rig.stores, reader).reread(effectId);
    const verification = await rig.receipt(effectId);
    expect(verification.finalMoney.disputes.map((d) => [d.status, d.amount, d.chargeAmount, d.chargeRefunded])).toEqual([['lost', 8_000, 10_000, 2_000]]);
    expect(verification.finalMoney.status).toBe('returned');
    expect(verification.exposure).toBeNull();
    expect(await rig.stores.alerts.get(`exposure:${effectId}`)).toBeNull();
  });

  it('of the whole charge, puts the refund at stake: the overlap, not the refund plus the chargeback', async () => {
    const effectId = await refundedThenChargedBack();
    await createFacts(rig.stores, stripeSide(rig.config).reader).reread(effectId);
    const verification = await rig.receipt(effectId);
    expect(verification.exposure).toMatchObject({ cents: 2_000, refundCents: 2_000, chargebackCents: 10_000, chargeCents: 10_000, refundedCents: 2_000 });
    expect(await rig.stores.alerts.get(`exposure:${effectId}`)).toMatchObject({ centsAtStake: 2_000 });
  });
});
