// The offline decider: without ANTHROPIC_API_KEY every case is decided by this rule, so every scenario and test
// runs on a machine with no key and no network. The rule is the one support approved: the approved amount, on the
// case's own kind, unless the facts the worker read for the case (the same ones the model decider is given) show the
// money went back already, or may have: a payment a person refunded, one with chargebacks (the facts name the
// disputes, not whether the merchant won them), an incident already compensated. Then it declines, saying which fact,
// and a person who checked it sends the money by hand. The gate re-checks only that the facts did not change since the decision, so a
// refund decided on a payment already refunded would go out a second time; the model decider declines such a case
// (its prompt), and this rule must too.
import { MAX_AMOUNT_CENTS } from '../core/effects.js';
import { moneyText } from '../core/money-text.js';
import { caseCurrency, parseCase, subjectId, type Decider, type Decision, type DecisionCase, type DeclineDecision } from './case.js';

/** The `model` the rules decider writes into PROPOSED's `decision`, and so into receipts. */
export const RULES_MODEL = 'rules';

/** A count of minor units the facts name, or 0 when they name none (not read, null, not a number). */
function centsIn(facts: Record<string, unknown> | undefined, name: string): number {
  const value = facts?.[name];
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/** The chargeback ids the facts name (disputes that are not inquiries), or none. */
function chargebacksIn(facts: Record<string, unknown> | undefined): string[] {
  const value = facts?.['chargebacks'];
  return Array.isArray(value) ? value.map(String) : [];
}

/** How a person sends the money by hand when, having read the facts, they find it is still owed. */
function byHand(input: DecisionCase): string {
  return input.kind === 'refund' ? `POST /v1/refunds (npx interlock refund) under approval ${input.approval.id}` : `POST /v1/credits (npx interlock credit) under approval ${input.approval.id}`;
}

/** `owed`: when a person sends the money by hand after reading the facts (by default, if the customer is still owed it). */
function decline(input: DecisionCase, fact: string, owed = 'if the customer is still owed money'): DeclineDecision {
  const reason = `${fact}, so no ${input.kind} was proposed for case ${input.caseId}. Nothing was sent and approval ${input.approval.id} was not used: ${owed}, a person sends it with ${byHand(input)}.`;
  return { action: 'decline', reason, model: RULES_MODEL, text: `rules: declined on the facts. ${reason}` };
}

/**
 * The fact that stops the case's money, as a sentence naming it, and when a person sends it by hand after all; or null
 * when the facts show none. A chargeback stops a refund whatever became of it: the facts name the disputes, not how
 * they ended, and one the merchant won returned nothing to the customer, so the person reading the decline checks the
 * dispute before sending anything.
 */
function stoppingFact(input: DecisionCase, currency: string | null): { fact: string; owed?: string } | null {
  const subject = subjectId(input.approval);
  if (input.kind === 'refund') {
    const payment = input.facts.get_payment;
    const chargebacks = chargebacksIn(payment);
    if (chargebacks.length > 0) return { fact: `Payment ${subject} has chargebacks (${chargebacks.slice(0, 5).join(', ')}${chargebacks.length > 5 ? ` and ${chargebacks.length - 5} more` : ''}): a refund beside a chargeback returns the money twice unless the merchant won the dispute, and the facts read at Stripe do not say how it ended`, owed: 'if the dispute was won by the merchant and the customer is still owed money' };
    const refunded = centsIn(payment, 'refunded_by_others');
    if (refunded > 0) return { fact: `Payment ${subject} was refunded ${moneyText(refunded, currency)} already, outside this case (refunded_by_others in the facts read at Stripe)` };
    return null;
  }
  const compensated = centsIn(input.facts.get_account, 'incident_compensation');
  if (compensated > 0) return { fact: `Customer ${subject} was given ${moneyText(compensated, currency)} for incident ${input.incident ?? '(none named)'} already (incident_compensation in the facts read at Stripe)` };
  return null;
}

export function decideByRules(input: DecisionCase): Decision {
  // In the currency the facts name (the amount is in its smallest unit); never dollars, which ¥5,000 is not.
  const currency = caseCurrency(input);
  const stopped = stoppingFact(input, currency);
  if (stopped !== null) return decline(input, stopped.fact, stopped.owed);
  // The approved amount, at most what one effect may move (an approval's cap may cover several).
  const amountCents = Math.min(input.approval.capCents, MAX_AMOUNT_CENTS);
  const approvedBy = input.approval.approver === undefined ? '' : ` by ${input.approval.approver}`;
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
