// Events about refunds and payments the gate never touched cost no Stripe read: most refunds on an account are not
// the gate's, and a read for each (a refund's own, or every refund of a charge.refunded's payment) spends the
// account's rate limit that the gate's own facts need. Events that name an effect, or a payment the gate dispatched
// on, are read as before.
import { describe, expect, it } from 'vitest';
import { createFacts, type StripeEvent, type StripeReader } from '../../src/interlock.js';
import { pay, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

function countingReader(calls: string[]): StripeReader {
  return {
    refund: async (id) => (calls.push(`refund ${id}`), null),
    refundsOf: async (paymentIntent) => (calls.push(`refundsOf ${paymentIntent}`), []),
    disputesOf: async (paymentIntent) => (calls.push(`disputesOf ${paymentIntent}`), []),
    creditsOf: async (customer) => (calls.push(`creditsOf ${customer}`), []),
  };
}

const refundEvent = (paymentIntent: string, metadata: Record<string, string>): StripeEvent => ({ id: `evt_r_${paymentIntent}`, type: 'refund.updated', data: { object: { id: `re_${paymentIntent}`, object: 'refund', status: 'succeeded', amount: 100, payment_intent: paymentIntent, metadata } } });
const chargeRefunded = (paymentIntent: string): StripeEvent => ({ id: `evt_c_${paymentIntent}`, type: 'charge.refunded', data: { object: { id: `ch_${paymentIntent}`, object: 'charge', payment_intent: paymentIntent } } });

describe('events the gate has nothing to do with', () => {
  it('a refund naming no effect and a charge.refunded on a payment nothing was dispatched on read nothing at Stripe', async () => {
    const calls: string[] = [];
    const facts = createFacts(rig.stores, countingReader(calls));
    expect(await facts.applyEvent(refundEvent('pi_foreign_refund', {}))).toEqual([]);
    expect(await facts.applyEvent(chargeRefunded('pi_foreign_charge'))).toEqual([]);
    expect(calls).toEqual([]);
  });

  it('a refund naming an effect, and a charge.refunded on a payment the gate refunded, are read', async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const calls: string[] = [];
    const facts = createFacts(rig.stores, countingReader(calls));
    await facts.applyEvent(refundEvent(paymentIntent, { interlock_effect_id: effectId }));
    await facts.applyEvent(chargeRefunded(paymentIntent));
    expect(calls).toEqual([`refund re_${paymentIntent}`, `refundsOf ${paymentIntent}`]);
  });
});
