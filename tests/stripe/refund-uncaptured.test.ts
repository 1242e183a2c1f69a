// Rule: `refundable` is the cents this effect may still refund: the captured amount less `refunded_by_others`
// (refund-target.ts header). A payment only authorised (capture_method manual, not captured yet) has captured nothing,
// and Stripe refunds no part of a PaymentIntent's uncaptured charge ("This uncaptured Charge was created by a
// PaymentIntent ... You must cancel the PaymentIntent to reverse the authorization"): it reads refundable 0, and so
// does one whose authorisation was canceled (its charge uncaptured, amount_refunded = amount). A refund of either is
// refused before anything reaches Stripe, saying why, not sent and refused by Stripe after the dispatch.
import { describe, expect, it } from 'vitest';
import { Rejected } from '../../src/core/target.js';
import { REFUND_FACTS } from '../../src/stripe/refund-target.js';
import { approvalTerms } from '../support/harness.js';
import { callsSince, effectIdFor, gateOnStripe, mark, sendContext } from './stripe-support.js';

const READ = { timeoutMs: 2_000 };

const { world, node, target } = gateOnStripe({ sendTimeoutMs: 1_000, settleMarginMs: 150, claimTtlMs: 2_500, heartbeatMs: 100, heartbeatTtlMs: 500 });

const refund = (paymentIntent: string, amount: number) => ({ kind: 'refund' as const, paymentIntent, amount });
const authorise = () => world.stripe.paymentIntents.create({ amount: 10_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true, capture_method: 'manual' });
const posts = async (since: number) => (await callsSince(world.sandbox, since)).filter((call) => call.startsWith('POST'));

describe('refundable on a payment with nothing captured', () => {
  it('reads 0 for a payment only authorised, for its whole amount as for part of it', async () => {
    const intent = await authorise();
    for (const amount of [2_000, 10_000]) {
      expect(await target.readFacts(effectIdFor('authorised'), refund(intent.id, amount), [...REFUND_FACTS], READ)).toMatchObject({ refunded_by_others: 0, refundable: 0, charge_status: 'succeeded' });
    }
  });

  it('reads 0 once the authorisation was canceled', async () => {
    const intent = await authorise();
    await world.stripe.paymentIntents.cancel(intent.id);
    expect(await world.stripe.charges.retrieve(String(intent.latest_charge))).toMatchObject({ captured: false, amount_refunded: 10_000, refunded: true });
    expect(await target.readFacts(effectIdFor('canceled'), refund(intent.id, 10_000), ['refundable'], READ)).toEqual({ refundable: 0 });
  });

  it('follows the captured amount once captured (less than authorised: the rest is released)', async () => {
    const intent = await authorise();
    await world.stripe.paymentIntents.capture(intent.id, { amount_to_capture: 6_000 });
    expect(await target.readFacts(effectIdFor('captured'), refund(intent.id, 2_000), ['refundable'], READ)).toEqual({ refundable: 6_000 });
  });

  it('apply refuses a refund of an uncaptured payment before the network, saying it is not captured', async () => {
    const intent = await authorise();
    const since = await mark(world.sandbox);
    const error = await target.apply(effectIdFor('apply'), refund(intent.id, 10_000), sendContext(2_000, { attempt: null })).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(Rejected);
    expect((error as Rejected).details.code).toBe('amount_exceeds_refundable');
    expect((error as Rejected).message).toContain('not captured');
    expect(await posts(since)).toEqual([]);
  });
});

describe('through the gate', () => {
  async function submitted(amount: number, between: (paymentIntent: string) => Promise<unknown> = async () => undefined) {
    const intent = await authorise();
    const terms = approvalTerms({ scope: `payment:${intent.id}`, capCents: 100_000 });
    await node.approvals.grant(terms);
    const draft = { requestId: `case-${intent.id}`, agent: 'support-bot', approval: terms.id, premises: {}, effect: refund(intent.id, amount) };
    const premises = await target.readFacts(node.gate.effectIdOf(draft), refund(intent.id, amount), [...REFUND_FACTS], READ);
    await between(intent.id);
    const since = await mark(world.sandbox);
    const answer = await node.gate.submit({ ...draft, premises });
    return { answer, posts: await posts(since) };
  }

  it('a partial refund of a payment only authorised: refused before the send', async () => {
    const { answer, posts: sent } = await submitted(2_000);
    expect({ outcome: answer.outcome, sent }).toEqual({ outcome: 'REFUSED:target_error', sent: [] });
    expect(answer.reason).toContain('not captured');
  });

  it('a refund decided on an authorisation canceled before the send: refused before the send', async () => {
    const { answer, posts: sent } = await submitted(10_000, (paymentIntent) => world.stripe.paymentIntents.cancel(paymentIntent));
    expect({ outcome: answer.outcome, sent }).toEqual({ outcome: 'REFUSED:target_error', sent: [] });
  });
});
