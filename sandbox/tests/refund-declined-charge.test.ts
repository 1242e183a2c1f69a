// Rule: Stripe refunds only money it took. A refund of a PaymentIntent without a successful charge is a 400 (stripe-facts
// §4.5: `This PaymentIntent (pi_…) does not have a successful charge to refund.`), and the same holds when the charge is
// named by id: a declined charge (`status: failed`, nothing captured) is a 400 invalid_request_error, and no refund,
// no `refund.created`, no balance transaction and no change to the charge follow. The sandbox used to refund it, as
// `succeeded`, so a client that refunds by charge id saw money returned that was never taken.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStripeError, startHarness } from './helpers.js';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

async function declinedCharge(): Promise<string> {
  const declined = await expectStripeError(h.stripe.paymentIntents.create({ amount: 1_000, currency: 'usd', payment_method: 'pm_card_chargeDeclined', confirm: true }));
  expect(declined.statusCode).toBe(402);
  const charge = (declined.raw as { charge?: string }).charge;
  if (charge === undefined) throw new Error('the decline names no charge');
  return charge;
}

describe('sandbox: refunding a charge that did not succeed', () => {
  it('refuses a refund of a declined charge named by id, with a 400 and nothing refunded', async () => {
    const charge = await declinedCharge();
    expect(await h.stripe.charges.retrieve(charge)).toMatchObject({ status: 'failed', amount_captured: 0 });
    const error = await expectStripeError(h.stripe.refunds.create({ charge }, { idempotencyKey: `refund-declined-${charge}` }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(error).toMatchObject({ statusCode: 400, rawType: 'invalid_request_error' });
    expect(error.message).toBe(`Charge ${charge} has a status of failed; only a successful charge can be refunded.`);
    expect(await h.stripe.charges.retrieve(charge)).toMatchObject({ amount_refunded: 0, refunded: false });
    expect((await h.stripe.refunds.list({ charge })).data).toEqual([]);
    const events = await h.stripe.events.list({ type: 'refund.created' });
    expect(events.data.filter((event) => (event.data.object as Stripe.Refund).charge === charge)).toEqual([]);
  });

  it('refuses a partial refund of it too, before the amount is looked at', async () => {
    const charge = await declinedCharge();
    const error = await expectStripeError(h.stripe.refunds.create({ charge, amount: 100 }));
    expect(error.statusCode).toBe(400);
    expect(error.param).toBeUndefined();
  });

  it('still refunds a successful charge named by id', async () => {
    const intent = await h.stripe.paymentIntents.create({ amount: 1_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
    const refund = await h.stripe.refunds.create({ charge: String(intent.latest_charge) });
    expect(refund).toMatchObject({ status: 'succeeded', amount: 1_000 });
  });
});
