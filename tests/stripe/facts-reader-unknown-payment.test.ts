// Rule (stripe/facts-reader.ts refundsOf, disputesOf): a payment Stripe does not know (its list answers 404
// resource_missing on the filter, as Stripe does for an unknown payment_intent) reads as no refunds and no disputes, as
// an unknown refund or charge reads as null, so a facts job or a reconcile pass on it does not fail for good; a payment
// Stripe knows still lists what it has.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFactsReader } from '../../src/stripe/facts-reader.js';
import { pay, startStripeWorld, type StripeWorld } from './stripe-support.js';

let world: StripeWorld;
beforeAll(async () => {
  world = await startStripeWorld();
});
afterAll(async () => {
  await world.close();
});

describe('the facts reader on a payment Stripe does not know', () => {
  it('reads no refunds and no disputes, where Stripe answers 404 on the filter', async () => {
    const listed = await world.stripe.refunds.list({ payment_intent: 'pi_unknown0000000000000000' }).catch((error: unknown) => error);
    expect(listed).toMatchObject({ statusCode: 404, code: 'resource_missing' });
    const reader = createFactsReader(world.client);
    expect(await reader.refundsOf('pi_unknown0000000000000000')).toEqual([]);
    expect(await reader.disputesOf('pi_unknown0000000000000000')).toEqual([]);
  });

  it('still lists the refunds and disputes of a payment Stripe knows', async () => {
    const refunded = await pay(world.stripe);
    const refund = await world.stripe.refunds.create({ payment_intent: refunded.paymentIntent, amount: 500 });
    const disputed = await pay(world.stripe, 'pm_card_createDispute');
    const reader = createFactsReader(world.client);
    expect((await reader.refundsOf(refunded.paymentIntent)).map((fact) => fact.id)).toEqual([refund.id]);
    expect((await reader.disputesOf(disputed.paymentIntent)).length).toBe(1);
  });
});
