// Rule (core/outcomes.ts explainRecorded): a REFUSED:target_error whose recorded reason is the target's own refusal
// before the network (recorded under REFUSED_BEFORE_SENDING_PREFIX; by an earlier version, known by the targets' wording
// "…; it was not sent": a refund over what is left refundable, a credit in another currency or for an incident already
// compensated) is not told "Stripe refused the request outright"; Stripe's own refusals, worded
// "Stripe refused POST … (400 …)" by src/stripe/errors.ts, and refusals the target words otherwise keep that sentence.
// The reason changes no other outcome's sentence. tests/http/target-refusal-sentence.test.ts checks it end to end.
import { describe, expect, it } from 'vitest';
import { explainOutcome, explainRecorded, REFUSED_BEFORE_SENDING_PREFIX } from '../../src/core/outcomes.js';

const BEFORE_SENDING = "The target's own check refused it before sending, so the request never reached Stripe; the reason says why.";

describe("a target's refusal's sentence", () => {
  it.each([
    ['a refund over what is left', 'the target refused: A refund of $30.00 is more than the $20.00 still refundable on pi_1; it was not sent'],
    ['a credit in another currency', 'the target refused: Customer cus_1 is billed in eur, and credits are given in usd (INTERLOCK_CREDIT_CURRENCY); Stripe keeps one credit balance per currency and applies it only to invoices in that currency, so a credit in usd would not reach this customer\'s invoices; it was not sent'],
    ['a payment Stripe does not know', "the target refused: No such payment_intent: 'pi_gone'; the refund was not sent"],
    // The gate's own record of a refusal with no status (gate/settle.ts), whatever the target's words and wherever
    // quoteError cut them.
    ['a refusal the target worded otherwise, made before sending', `${REFUSED_BEFORE_SENDING_PREFIX}the incident is closed`],
    ['a refusal cut at its limit, made before sending', `${REFUSED_BEFORE_SENDING_PREFIX}${'x'.repeat(480)}…`],
  ])('of %s says the target refused it before sending', (_, reason) => {
    expect(explainRecorded('REFUSED:target_error', reason)).toBe(BEFORE_SENDING);
  });

  it.each([
    ['Stripe refused it', 'the target refused: Stripe refused POST /v1/refunds (400 charge_disputed: Charge ch_1 has been charged back; cannot issue a refund.)'],
    ['the target words it otherwise', 'the target refused: the target refused the request'],
    ['no reason is known', null],
  ])('when %s is the one for target_error', (_, reason) => {
    expect(explainRecorded('REFUSED:target_error', reason)).toBe(explainOutcome('REFUSED:target_error'));
    expect(explainOutcome('REFUSED:target_error')).toMatch(/^Stripe refused the request outright/);
  });

  it("leaves every other outcome's sentence as it is", () => {
    expect(explainRecorded('REFUSED:lease', 'approval ap_1 was revoked; it was not sent')).toBe(explainOutcome('REFUSED:lease'));
    expect(explainRecorded('COMMITTED', undefined)).toBe(explainOutcome('COMMITTED'));
  });
});
