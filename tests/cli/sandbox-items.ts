// Inbox items whose facts are the Stripe sandbox's: the CLI's `inbox reapprove` reads the payment's facts at Stripe,
// and a re-approval stands on the facts its item showed (facts_changed), so the item must show what the sandbox holds.
import { expect } from 'vitest';
import type { ItemMaker } from '../http/inbox-items.js';
import type { Rig } from '../http/rig.js';
import { pay, type StripeWorld } from '../stripe/stripe-support.js';

/**
 * A stale_premise item on a payment in the sandbox, showing the chargeback the sandbox has on it: a $50 payment with a
 * card that is charged back, and a refund decided before that chargeback and refused at the send (the rig's target
 * reads it as the sandbox does).
 */
export async function staleOnChargedBack(stripe: StripeWorld, make: ItemMaker, rig: Rig): Promise<{ paymentIntent: string; item: string; effectId: string; chargeback: string }> {
  const { paymentIntent } = await pay(stripe.stripe, 'pm_card_createDispute', 5_000);
  const [dispute] = (await stripe.stripe.disputes.list({ payment_intent: paymentIntent })).data;
  if (dispute === undefined) throw new Error('the sandbox opened no dispute');
  const effectId = await make.proposed(paymentIntent);
  rig.target.world.set(`payment:${paymentIntent}`, { chargebacks: [dispute.id], refunded_by_others: 0 });
  expect(await make.submitLatest(effectId)).toBe('REFUSED:stale_premise');
  return { paymentIntent, item: `stale_premise:${effectId}`, effectId, chargeback: dispute.id };
}
