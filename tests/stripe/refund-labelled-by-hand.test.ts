// Rule: `refunded_by_others` counts every refund that is not this effect's own (refund-target.ts header), and a refund
// whose metadata carries the effect id but whose amount is not what the send makes is not the effect's own (findOwn,
// whyNotOwn: metadata is a lead, not proof). So the pre-send remainder check must see it and refuse an over-refund
// before the network, not let Stripe's refusal answer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rejected, type Target } from '../../src/core/target.js';
import { createRefundTarget, REFUND_FACTS } from '../../src/stripe/refund-target.js';
import { callsSince, effectIdFor, mark, pay, sendContext, startStripeWorld, TEST_ATTEMPT, type StripeWorld } from './stripe-support.js';

let world: StripeWorld;
let target: Target;
beforeAll(async () => {
  world = await startStripeWorld();
  target = createRefundTarget(world.client, { sendTimeoutMs: 2_000 });
});
afterAll(() => world.close());

const READ = { timeoutMs: 2_000 };
const refund = (paymentIntent: string, amount: number) => ({ kind: 'refund' as const, paymentIntent, amount });

describe('a refund made by hand carrying our effect id, of another amount', () => {
  it('counts as refunded by others in the premises', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('hand-made');
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 8_000, metadata: { interlock_effect_id: effectId } });
    // The lookup agrees it is not ours (amount differs):
    expect(await target.query(effectId, refund(paymentIntent, 5_000), READ)).toBeNull();
    expect(await target.readFacts(effectId, refund(paymentIntent, 5_000), [...REFUND_FACTS], READ)).toMatchObject({ refunded_by_others: 8_000, refundable: 2_000 });
  });

  it('makes apply refuse an over-refund before the network', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('hand-made-send');
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 8_000, metadata: { interlock_effect_id: effectId } });
    await target.readFacts(effectId, refund(paymentIntent, 5_000), [...REFUND_FACTS], { ...READ, premiseCheck: true, attempt: TEST_ATTEMPT });
    const since = await mark(world.sandbox);
    const error = await target.apply(effectId, refund(paymentIntent, 5_000), sendContext()).catch((e: unknown) => e);
    const calls = await callsSince(world.sandbox, since);
    expect({ rejected: error instanceof Rejected, code: error instanceof Rejected ? error.details.code : String(error), posted: calls.filter((c) => c.startsWith('POST /v1/refunds')) })
      .toEqual({ rejected: true, code: 'amount_exceeds_refundable', posted: [] });
  });
});
