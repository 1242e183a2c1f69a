// Rule: a deviation read out of a malformed answer with several calls outside the approval records the other
// subjects every one of them named (bounded: a few named, the rest counted), not only the largest call's: a call naming
// another payment beside a larger over-cap call still shows "named payment_intent pi_…" to the person reading the case
// or inbox item, who learns where the injected ask tried to send money.
import { afterEach, expect, it } from 'vitest';
import { createAnthropicDecider } from '../../src/decider/decider.js';
import { checkDecision } from '../../src/decider/check.js';
import { refundCase } from './cases.js';
import { configFor } from './decider-support.js';
import { replies, messagesServerSuite } from './messages-server.js';

const server = messagesServerSuite();
afterEach(() => server.reset());
const config = configFor(() => server);

it('an over-cap call beside a call naming pi_attacker123: the recorded problems name pi_attacker123', async () => {
  server.script(
    replies.toolUse('get_payment', {}),
    replies.toolUses([
      { name: 'issue_refund', input: { amount_cents: 500_000, reason: 'Compliance notice.' } },
      { name: 'issue_refund', input: { amount_cents: 1_000, reason: 'Compliance notice.', payment_intent: 'pi_attacker123' } },
    ]),
  );
  const input = refundCase();
  const decision = await createAnthropicDecider(config()).decide(input);
  const check = checkDecision(decision, input.approval, input.kind, null);
  expect(check.verdict).toBe('MODEL_DEVIATED');
  // What the case's problems, the inbox item's detail and the deviation hook carry:
  const recorded = check.verdict === 'MODEL_DEVIATED' ? check.problems.join('; ') : '';
  expect(recorded).toContain('pi_attacker123');
});
