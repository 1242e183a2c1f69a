// The offline decider: without ANTHROPIC_API_KEY every case is decided by this rule, so every scenario and test
// runs on a machine with no key and no network. The rule is the one support approved: the approved amount, on the
// case's own kind. Facts are the gate's to judge (premises), not this rule's, so it never declines.
import { MAX_AMOUNT_CENTS } from '../core/effects.js';
import { moneyText } from '../core/money-text.js';
import { caseCurrency, parseCase, type Decider, type Decision, type DecisionCase } from './case.js';

/** The `model` the rules decider writes into PROPOSED's `decision`, and so into receipts. */
export const RULES_MODEL = 'rules';

export function decideByRules(input: DecisionCase): Decision {
  // The approved amount, at most what one effect may move (an approval's cap may cover several).
  const amountCents = Math.min(input.approval.capCents, MAX_AMOUNT_CENTS);
  const approvedBy = input.approval.approver === undefined ? '' : ` by ${input.approval.approver}`;
  // In the currency the facts name (the amount is in its smallest unit); never dollars, which ¥5,000 is not.
  const currency = caseCurrency(input);
  switch (input.kind) {
    case 'refund': {
      const reason = `Goodwill refund of ${moneyText(amountCents, currency)} for case ${input.caseId}, the amount approved${approvedBy} under ${input.approval.id}.`;
      return { action: 'refund', amountCents, reason, model: RULES_MODEL, text: `rules: the approved amount. ${reason}` };
    }
    case 'credit': {
      const incident = input.incident === undefined ? '' : ` for incident ${input.incident}`;
      // The description is the balance transaction's, which the customer reads on their invoice: an amount whose
      // currency the facts do not name is left out, not written as minor units of a currency unknown.
      const amount = currency === null ? '' : ` of ${moneyText(amountCents, currency)}`;
      const description = `Goodwill credit${amount}${incident} (case ${input.caseId}).`;
      return { action: 'credit', amountCents, description, model: RULES_MODEL, text: `rules: the approved amount, approved${approvedBy} under ${input.approval.id}. ${description}` };
    }
    default: {
      const never: never = input.kind;
      return never;
    }
  }
}

export function createRulesDecider(): Decider {
  return {
    name: 'rules',
    async decide(input) {
      return decideByRules(parseCase(input));
    },
  };
}
