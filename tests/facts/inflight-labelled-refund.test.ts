// Rule: DESIGN §5/§8 and README "Post-send facts": metadata is a lead, not proof; an effect that sent once and committed its own refund has a valid receipt with happenedOnce true, whatever refunds others label with its id.
// While the dispatch is open, a refund that names the effect with its amount cannot be told from the send's own, even
// when it is the only one yet: none is recorded, the payment is marked, and the settle's re-read records the one the
// commit names (src/facts/apply.ts holdInFlight).
// Before, any refund naming the effect with its amount was recorded as its own while it was in flight, the entry
// stayed on the chain after the effect committed its real refund, and verify() called the receipt invalid and the
// effect sent twice.
import { describe, expect, it } from 'vitest';
import { pay, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

/**
 * A gated refund of 2,000 on a fresh payment while someone refunds 2,000 by hand labelled with its effect id, its
 * events applied: `before` the send's POST reaches Stripe (a slow network), or `after` it landed and before its answer
 * is recorded (a slow answer). Answers the effect, the hand-made refund and the effect's receipt after a re-read.
 */
async function refundLabelledByHand(when: 'before' | 'after'): Promise<{ effectId: string; labelled: string; receipt: Awaited<ReturnType<typeof rig.receipt>> }> {
  const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
  await rig.sandbox.control.idle();
  await rig.drained();
  const target = rig.target;
  const apply = target.apply.bind(target);
  let labelled = '';
  const labelByHand = async (effectId: string) => {
    labelled = (await rig.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { interlock_effect_id: effectId } })).id;
    await rig.sandbox.control.idle();
    await rig.drained();
  };
  target.apply = async (effectId, effect, context) => {
    if (when === 'before') await labelByHand(effectId);
    const result = await apply(effectId, effect, context);
    if (when === 'after') await labelByHand(effectId);
    return result;
  };
  let effectId: string;
  try {
    effectId = await rig.refund(paymentIntent, 2_000);
  } finally {
    target.apply = apply;
  }
  await rig.sandbox.control.idle();
  await rig.drained();
  await rig.facts.reread(effectId);
  return { effectId, labelled, receipt: await rig.receipt(effectId) };
}

describe('a refund labelled by hand with the id of an effect in flight', () => {
  it('does not make the receipt of the effect that committed its own refund invalid or "not happened once"', async () => {
    // The gate's POST lands at Stripe; before its answer is recorded (a slow answer), a Dashboard user copies the
    // effect id from that refund's metadata onto a refund of the same amount they make by hand.
    const { labelled, receipt } = await refundLabelledByHand('after');
    expect(receipt.evidence).not.toBe(labelled);
    // Before the fix: valid false, happenedOnce false, problems ["an OBSERVED refund re_… is not the refund the effect committed (re_…)"].
    expect({ valid: receipt.valid, happenedOnce: receipt.happenedOnce, problems: receipt.problems }).toEqual({ valid: true, happenedOnce: true, problems: [] });
    expect(receipt.finalMoney.refunds.map((refund) => refund.id)).toEqual([receipt.evidence]);
  });

  // Rule: a refund made by hand with the effect's id (from the API's answer to the proposal) and amount while the
  // dispatch is open, before the send's POST reached Stripe, is not recorded as the effect's own though it is the only
  // candidate then. Before, it was (only two or more were held back), the commit then named the send's own refund, and
  // verify() flagged the hand-made OBSERVED: valid false, happenedOnce false.
  it('does not record a refund labelled by hand before the send reached Stripe, the only candidate then, as the effect\'s own', async () => {
    // The dispatch is open (DISPATCHED recorded), its POST not at Stripe yet (a slow network). A support person who got
    // the effect id from the API's answer refunds by hand and labels the refund with it; its events are applied.
    const { effectId, labelled, receipt } = await refundLabelledByHand('before');
    // The send made its own refund (its idempotency key was never used by the hand-made one).
    expect(receipt.evidence).not.toBe(labelled);
    // Before the fix: valid false, happenedOnce false, problems ["an OBSERVED refund re_<hand-made> is not the
    // refund the effect committed (re_<own>)"].
    expect({ valid: receipt.valid, happenedOnce: receipt.happenedOnce, problems: receipt.problems }).toEqual({ valid: true, happenedOnce: true, problems: [] });
    const observed = (await rig.observed(effectId)).map((entry) => entry.objectId);
    expect(observed).not.toContain(labelled);
    // The send's own refund is on the receipt (recorded after the commit, by its events or the settle's re-read).
    expect(observed).toContain(receipt.evidence);
    expect(receipt.finalMoney.refunds.map((refund) => refund.id)).toEqual([receipt.evidence]);
  });
});
