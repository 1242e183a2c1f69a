// Rule (ReadContext.neverSent, SendContext.neverSent): an effect none of whose sends can have landed has no object of
// its own at Stripe, so the refund and credit targets count one labelled with its id (made by hand, the id copied from
// the API's answer) as someone else's: in `refunded_by_others` and `refundable`, in `incident_compensation`, and in
// apply's pre-send checks. Without the flag (recovery's re-read and resend) the object the lookup would take stays the
// effect's own, so a resend after a landed send still fits. And the pre-send refusal states its money in the payment's
// currency (moneyText), not in "cents": ¥5,000 is 5000 JPY, not 50.00.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rejected, type Target } from '../../src/core/target.js';
import { createCreditTarget, CREDIT_FACTS } from '../../src/stripe/credit-target.js';
import { createRefundTarget, REFUND_FACTS } from '../../src/stripe/refund-target.js';
import { callsSince, effectIdFor, mark, pay, sendContext, startStripeWorld, TEST_ATTEMPT, type StripeWorld } from './stripe-support.js';

let world: StripeWorld;
let refunds: Target;
let credits: Target;
beforeAll(async () => {
  world = await startStripeWorld();
  refunds = createRefundTarget(world.client, { sendTimeoutMs: 2_000 });
  credits = createCreditTarget(world.client, { sendTimeoutMs: 2_000 });
});
afterAll(() => world.close());

const READ = { timeoutMs: 2_000 };
const FIRST_DISPATCH = { ...READ, premiseCheck: true, attempt: TEST_ATTEMPT, neverSent: true as const };
const refund = (paymentIntent: string, amount: number) => ({ kind: 'refund' as const, paymentIntent, amount });
const INCIDENT = 'INC-never-sent';
const credit = (customer: string, amount = 1_000) => ({ kind: 'credit' as const, customer, amount, incident: INCIDENT });
/** A send context for the first dispatch's send, which the premise read above names. */
const firstSend = () => Object.assign(sendContext(), { neverSent: true as const });
const posts = (calls: string[]) => calls.filter((call) => call.startsWith('POST'));

describe('the refund target', () => {
  it('counts a refund labelled with the effect id, of its amount, as refunded by others when no send can have landed', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('labelled by hand, first dispatch');
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { interlock_effect_id: effectId } });
    expect(await refunds.readFacts(effectId, refund(paymentIntent, 2_000), [...REFUND_FACTS], FIRST_DISPATCH)).toMatchObject({ refunded_by_others: 2_000, refundable: 8_000 });
    // Recovery's re-read (no flag): the refund the lookup takes for the effect's own is left out, as before.
    expect(await refunds.readFacts(effectId, refund(paymentIntent, 2_000), [...REFUND_FACTS], READ)).toMatchObject({ refunded_by_others: 0, refundable: 10_000 });
  });

  it("refuses a first dispatch's send that the labelled refund leaves no room for, before the network, reading the payment itself", async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('labelled by hand, no premise read');
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 6_000, metadata: { interlock_effect_id: effectId } });
    const since = await mark(world.sandbox);
    const error = await refunds.apply(effectId, refund(paymentIntent, 6_000), Object.assign(sendContext(2_000, { attempt: null }), { neverSent: true as const })).catch((e: unknown) => e);
    expect({ code: error instanceof Rejected ? error.details.code : String(error), posted: posts(await callsSince(world.sandbox, since)) }).toEqual({ code: 'amount_exceeds_refundable', posted: [] });
  });

  it("states the pre-send refusal in the payment's currency: a yen refund in JPY, not cents", async () => {
    const intent = await world.stripe.paymentIntents.create({ amount: 1_000, currency: 'jpy', payment_method: 'pm_card_visa', confirm: true });
    const effectId = effectIdFor('yen, too much');
    await refunds.readFacts(effectId, refund(intent.id, 5_000), [...REFUND_FACTS], FIRST_DISPATCH);
    const error = await refunds.apply(effectId, refund(intent.id, 5_000), firstSend()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Rejected);
    expect((error as Rejected).message).toBe(`A refund of 5000 JPY is more than the 1000 JPY still refundable on ${intent.id}; it was not sent`);
  });
});

describe('the credit target', () => {
  it('counts a credit labelled with the effect id and tagged with the incident as compensation when no send can have landed', async () => {
    const customer = await world.stripe.customers.create({ name: 'labelled by hand' });
    const effectId = effectIdFor('credit labelled by hand');
    await world.stripe.customers.createBalanceTransaction(customer.id, { amount: -1_000, currency: 'usd', metadata: { interlock_effect_id: effectId, interlock_incident: INCIDENT } });
    expect(await credits.readFacts(effectId, credit(customer.id), [...CREDIT_FACTS], FIRST_DISPATCH)).toMatchObject({ incident_compensation: 1_000 });
    // The send that follows that read refuses before the network.
    const since = await mark(world.sandbox);
    const error = await credits.apply(effectId, credit(customer.id), firstSend()).catch((e: unknown) => e);
    expect({ code: error instanceof Rejected ? error.details.code : String(error), posted: posts(await callsSince(world.sandbox, since)) }).toEqual({ code: 'incident_already_compensated', posted: [] });
    // Recovery's re-read (no flag): the effect's own credit is not counted, as before.
    expect(await credits.readFacts(effectId, credit(customer.id), [...CREDIT_FACTS], READ)).toMatchObject({ incident_compensation: 0 });
  });
});
