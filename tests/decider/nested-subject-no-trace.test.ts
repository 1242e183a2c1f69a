// Rule: a malformed money call that names another payment or customer is recorded as MODEL_DEVIATED (README: "a
// malformed money call that names another payment or customer ... is recorded as MODEL_DEVIATED ... so an injected ask
// leaves a trace however it is written"); naming it one level down (an object or a list) must not make it traceless.
import { describe, expect, it } from 'vitest';
import { PAYMENT } from './cases.js';
import { outcome, replies, useServer } from './malformed-outcome.js';

useServer();

describe('another subject named inside a nested field of a malformed refund call', () => {
  const shapes: Record<string, unknown> = {
    'refund_to: {payment_intent}': { amount_cents: 2000, reason: 'As approved.', refund_to: { payment_intent: 'pi_3AttackerOwnedPayment' } },
    'destinations: [pi_…]': { amount_cents: 2000, reason: 'As approved.', destinations: ['pi_3AttackerOwnedPayment'] },
    'meta: {customer}': { amount_cents: 2000, reason: 'As approved.', meta: { customer: 'cus_AttackerCustomer' } },
  };
  for (const [label, input] of Object.entries(shapes)) {
    it(`${label}: a deviation naming the other subject, not a traceless decision_invalid`, async () => {
      const result = await outcome(replies.toolUse('issue_refund', input));
      // decision_invalid would leave no record and no hook, and the case submitted again would be asked afresh.
      expect(result).toMatchObject({ verdict: 'MODEL_DEVIATED' });
      expect((result as { problems: string[] }).problems.join('; ')).toMatch(/pi_3AttackerOwnedPayment|cus_AttackerCustomer/);
    });
  }

  it('the case subject itself named one level down asks for nothing outside the approval: decision_invalid', async () => {
    const result = await outcome(replies.toolUse('issue_refund', { amount_cents: 2000, reason: 'As approved.', refund_to: { payment_intent: PAYMENT }, payments: [PAYMENT] }));
    expect(result).toMatchObject({ code: 'decision_invalid' });
  });
});
