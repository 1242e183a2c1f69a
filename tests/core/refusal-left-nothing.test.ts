// Rule (core/outcomes.ts refusalLeftNothing): a REFUSED:target_error's reason says nothing of the effect can be at the
// target only when the gate wrote it so (its only send refused: NOTHING_LANDED_SUFFIX after the gate's own prefix). A
// reason an earlier version recorded, a refusal before sending of a resend, or any other reason leaves a late landing
// possible. The suffix changes no sentence: a refusal before sending is still told so, one Stripe made keeps its own.
import { describe, expect, it } from 'vitest';
import { explainOutcome, explainRecorded, NOTHING_LANDED_SUFFIX, REFUSED_BEFORE_SENDING_PREFIX, REFUSED_BY_TARGET_PREFIX, refusalLeftNothing } from '../../src/core/outcomes.js';

const STRIPE_400 = 'Stripe refused POST /v1/refunds (402 card_declined: Your card was declined.)';
const BEFORE = 'A refund of $20.00 is more than the $10.00 still refundable on pi_1; it was not sent';

describe("a target refusal's reason", () => {
  it.each([
    ['Stripe refused the only send', `${REFUSED_BY_TARGET_PREFIX}${STRIPE_400}${NOTHING_LANDED_SUFFIX}`],
    ['the target refused the only send before sending', `${REFUSED_BEFORE_SENDING_PREFIX}${BEFORE}${NOTHING_LANDED_SUFFIX}`],
  ])('says nothing landed when %s', (_, reason) => {
    expect(refusalLeftNothing(reason)).toBe(true);
  });

  it.each([
    ['Stripe refused a send that may not be the only one', `${REFUSED_BY_TARGET_PREFIX}${STRIPE_400}`],
    ['the target refused a resend before sending', `${REFUSED_BEFORE_SENDING_PREFIX}${BEFORE}`],
    ['an earlier version recorded a refusal before sending', `the target refused: ${BEFORE}`],
    ['the words come without the gate\'s prefix', `recovery refused it${NOTHING_LANDED_SUFFIX}`],
  ])('leaves a landing possible when %s', (_, reason) => {
    expect(refusalLeftNothing(reason)).toBe(false);
  });

  it('keeps the sentence each refusal had', () => {
    expect(explainRecorded('REFUSED:target_error', `${REFUSED_BEFORE_SENDING_PREFIX}${BEFORE}${NOTHING_LANDED_SUFFIX}`)).toBe(explainRecorded('REFUSED:target_error', `${REFUSED_BEFORE_SENDING_PREFIX}${BEFORE}`));
    expect(explainRecorded('REFUSED:target_error', `${REFUSED_BEFORE_SENDING_PREFIX}${BEFORE}`)).not.toBe(explainOutcome('REFUSED:target_error'));
    expect(explainRecorded('REFUSED:target_error', `${REFUSED_BY_TARGET_PREFIX}${STRIPE_400}${NOTHING_LANDED_SUFFIX}`)).toBe(explainOutcome('REFUSED:target_error'));
  });
});
