// Rule: a dispute opens only on a charge Stripe lets be disputed: a successful one (a declined charge, `status:
// failed`, took no money; disputes come from test cards on successful payments, stripe-facts §5.1, §5.4) that is not
// fully refunded ("A charge that is fully refunded can no longer be disputed", stripe-facts §4.4). The control API's
// dispute injection (POST /_sandbox/disputes) answers 400 invalid_request_error saying why, and opens nothing: no
// dispute, no withdrawal, no event. A partially refunded charge can still be disputed. The sandbox used to open a
// chargeback on any charge, withdrawing money twice on a refunded one and "charging back" a declined one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStripeError, startHarness } from './helpers.js';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

async function inject(charge: string): Promise<{ status: number; body: { id?: string; error?: { type?: string; message?: string } } }> {
  const response = await fetch(`${h.sandbox.url}/_sandbox/disputes`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ charge, kind: 'chargeback' }).toString(),
  });
  return { status: response.status, body: (await response.json()) as { id?: string; error?: { type?: string; message?: string } } };
}

async function disputeEventsOn(charge: string): Promise<number> {
  const events = (await h.stripe.events.list({ type: 'charge.dispute.*', limit: 100 })).data;
  return events.filter((event) => (event.data.object as { charge?: string }).charge === charge).length;
}

describe('sandbox: disputes only on charges Stripe lets be disputed', () => {
  it('refuses a chargeback on a fully refunded charge with a 400 saying so, opening nothing', async () => {
    const intent = await h.stripe.paymentIntents.create({ amount: 4_200, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
    await h.stripe.refunds.create({ payment_intent: intent.id });
    const charge = String(intent.latest_charge);
    const answer = await inject(charge);
    expect({ status: answer.status, type: answer.body.error?.type, message: answer.body.error?.message }).toEqual({
      status: 400,
      type: 'invalid_request_error',
      message: `Charge ${charge} has been fully refunded; a fully refunded charge can no longer be disputed.`,
    });
    expect({ disputes: (await h.stripe.disputes.list({ charge })).data.length, events: await disputeEventsOn(charge), disputed: (await h.stripe.charges.retrieve(charge)).disputed }).toEqual({ disputes: 0, events: 0, disputed: false });
  });

  it('refuses a chargeback on a declined charge with a 400 saying so, opening nothing', async () => {
    const declined = await expectStripeError(h.stripe.paymentIntents.create({ amount: 1_000, currency: 'usd', payment_method: 'pm_card_chargeDeclined', confirm: true }));
    const charge = String((declined.raw as { charge?: string }).charge);
    const answer = await inject(charge);
    expect({ status: answer.status, type: answer.body.error?.type, message: answer.body.error?.message }).toEqual({
      status: 400,
      type: 'invalid_request_error',
      message: `Charge ${charge} has a status of failed; only a successful charge can be disputed.`,
    });
    expect({ disputes: (await h.stripe.disputes.list({ charge })).data.length, events: await disputeEventsOn(charge) }).toEqual({ disputes: 0, events: 0 });
  });

  it('still opens a chargeback on a partially refunded charge', async () => {
    const intent = await h.stripe.paymentIntents.create({ amount: 4_200, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
    await h.stripe.refunds.create({ payment_intent: intent.id, amount: 1_000 });
    const answer = await inject(String(intent.latest_charge));
    expect({ status: answer.status, id: answer.body.id?.startsWith('du_') }).toEqual({ status: 200, id: true });
  });
});
