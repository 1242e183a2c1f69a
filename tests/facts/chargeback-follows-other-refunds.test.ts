// Rule: a receipt's exposure follows what is refunded on the charge at Stripe (DESIGN §3 F, §8; README: "a chargeback
// of only the part no refund returned is none"), whichever refund on the charge changed it. When another refund on a
// charged-back charge fails after the chargeback was recorded (one the gate made for another effect, or one made by
// hand in the Dashboard), what is refunded on the charge drops and the chargeback may no longer overlap this effect's
// refund: the refund's event re-reads the payment's disputes and charge for every effect committed on it, so the
// receipt stops reporting money returned twice and its exposure alert is resolved, with no wait for the reconciler
// (whose horizon a failure at the bank often comes after).
//
// Rule: that re-read is made only when the charge at Stripe differs from a read standing on the payment's receipts: a
// refund event delivered again finds the read recorded and reads no disputes, and appends nothing.
//
// The refunds on a charge share what its chargeback returned twice, the newest first (final-money.ts, deriveExposure):
// each test makes its refunds seconds apart, so the receipt it watches holds the newest refund and the whole overlap.
//
// The sandbox opens only full-amount chargebacks; Stripe's can be for part of the charge ("only part of the order is
// disputed"). The reader below reports the chargeback at 7000 of the 10000 charge, everything else as the sandbox has it.
import { expect, it } from 'vitest';
import { createFacts, stripeSide, type Applied, type StripeEvent, type StripeReader } from '../../src/interlock.js';
import { pay, sharedFactsRig } from './facts-rig.js';

// The sandbox's events are applied below, in the order Stripe made them, by a facts applier of the test's own.
const rig = sharedFactsRig({ forward: false, factsWorker: false });

const PARTIAL = 7_000;

/**
 * A facts applier over the sandbox with the chargeback at PARTIAL, counting its reads of disputes; `deliver` applies the
 * events the sandbox made since this was called that it has not applied yet.
 */
async function partialDisputeFacts() {
  const real = stripeSide(rig.config).reader;
  const reads = { disputes: 0 };
  const reader: StripeReader = {
    ...real,
    disputesOf: async (paymentIntent) => {
      reads.disputes += 1;
      return (await real.disputesOf(paymentIntent)).map((dispute) => ({ ...dispute, amount: PARTIAL }));
    },
  };
  const facts = createFacts(rig.stores, reader);
  const list = async () => (await rig.stripe.events.list({ limit: 100 })).data.reverse() as unknown as StripeEvent[];
  const seen = new Set((await list()).map((event) => event.id));
  const deliver = async (): Promise<{ events: StripeEvent[]; applied: Applied[] }> => {
    const events = await list();
    const fresh = events.filter((event) => !seen.has(event.id));
    const applied: Applied[] = [];
    for (const event of fresh) {
      seen.add(event.id);
      applied.push(...(await facts.applyEvent(event)));
    }
    return { events: fresh, applied };
  };
  return { facts, reads, deliver };
}

const openAlerts = async (effectId: string) => (await rig.stores.alerts.list()).filter((alert) => alert.effectId === effectId && alert.resolvedAt === null).map((alert) => alert.kind);

it("resolves an effect's exposure when another effect's refund on the charged-back charge fails at the bank", async () => {
  await rig.sandbox.control.configure({ pending_refund_dispute_window_seconds: 0 });
  const { facts, reads, deliver } = await partialDisputeFacts();
  const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
  const a = await rig.commit({ kind: 'refund', paymentIntent, amount: 3_000, reason: 'requested_by_customer' });
  await rig.sandbox.control.advanceClock(5);
  const b = await rig.commit({ kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer' });
  await deliver();

  // 7000 of the 10000 charge disputed while 5000 is refunded: 2000 returned twice, B's 2000 (the newest refund).
  await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
  await deliver();
  expect((await rig.receipt(b)).exposure).toMatchObject({ cents: 2_000, paymentTwiceCents: 2_000, refundedCents: 5_000 });
  expect(await openAlerts(b)).toContain('exposure');
  expect((await rig.receipt(a)).exposure).toBeNull();

  // A's 3000 refund fails at the bank: Stripe has 2000 refunded, and 2000 + 7000 <= 10000 returns nothing twice.
  const refundA = (await rig.stripe.refunds.list({ payment_intent: paymentIntent })).data.find((refund) => refund.amount === 3_000);
  await rig.sandbox.control.request('POST', `/refunds/${refundA?.id ?? ''}/fail`, { failure_reason: 'expired_or_canceled_card' });
  const failure = await deliver();
  expect((await rig.stripe.charges.retrieve(charge)).amount_refunded).toBe(2_000);

  expect((await rig.receipt(a)).finalMoney.status).toBe('not_returned');
  const after = await rig.receipt(b);
  expect(after.finalMoney.status).toBe('returned');
  expect(after.finalMoney.disputes.map((dispute) => [dispute.amount, dispute.chargeAmount, dispute.chargeRefunded])).toEqual([[PARTIAL, 10_000, 2_000]]);
  expect(after.exposure).toBeNull();
  expect(await openAlerts(b)).not.toContain('exposure');
  expect(await rig.stores.alerts.get(`exposure:${b}`)).toMatchObject({ resolvedAt: expect.any(Number) });

  // The failure's events delivered again: the read stands, so no dispute is read and nothing is appended.
  const before = reads.disputes;
  const again: Applied[] = [];
  for (const event of failure.events) again.push(...(await facts.applyEvent(event)));
  expect(again.reduce((sum, applied) => sum + applied.appended, 0)).toBe(0);
  expect(reads.disputes).toBe(before);
  expect((await rig.receipt(b)).exposure).toBeNull();
});

it("resolves a gated refund's exposure when a refund made by hand on the charged-back charge fails", async () => {
  await rig.sandbox.control.configure({ pending_refund_dispute_window_seconds: 0 });
  const { deliver } = await partialDisputeFacts();
  const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
  // Made in the Dashboard: no effect's id in its metadata, the gate's journal knows nothing of it. Made first, so the
  // gated refund is the newest and the overlap is its (made after it, the refund by hand would take it: its share).
  const byHand = await rig.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000 });
  await rig.sandbox.control.advanceClock(5);
  const gated = await rig.commit({ kind: 'refund', paymentIntent, amount: 3_000, reason: 'requested_by_customer' });
  await deliver();

  await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
  await deliver();
  expect((await rig.receipt(gated)).exposure).toMatchObject({ cents: 2_000, paymentTwiceCents: 2_000, refundedCents: 5_000 });

  // The hand-made refund fails: 3000 refunded, and 3000 + 7000 <= 10000 returns nothing twice.
  await rig.sandbox.control.request('POST', `/refunds/${byHand.id}/fail`, { failure_reason: 'expired_or_canceled_card' });
  await deliver();
  const after = await rig.receipt(gated);
  expect(after.finalMoney.status).toBe('returned');
  expect(after.exposure).toBeNull();
  expect(await openAlerts(gated)).not.toContain('exposure');
});
