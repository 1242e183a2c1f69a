// The facts that stop a case's money, whichever decider decided it: a payment a person refunded outside the case, one
// with chargebacks (the facts name the disputes, not whether the merchant won them), an incident already compensated.
// The gate re-checks only that the facts did not change since the decision, so money decided on such facts would go
// back a second time. The rules decider declines on them; checkDecision records any money decision on them as
// MODEL_DEVIATED, so a prompt the case's story talked round never sends it (a person reads the fact and re-approves
// the money only when it is owed after all).
import { moneyText } from '../core/money-text.js';
import { subjectId, type DecisionCase } from './case.js';

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

/** The parts of a case the stopping facts are read from. */
export type FactsOfCase = Pick<DecisionCase, 'kind' | 'approval' | 'facts' | 'incident'>;

/**
 * The fact that stops the case's money, as a sentence naming it, and when a person sends it by hand after all; or null
 * when the facts show none. A chargeback stops a refund whatever became of it: the facts name the disputes, not how
 * they ended, and one the merchant won returned nothing to the customer, so the person reading the decline checks the
 * dispute before sending anything. `currency`: the one the facts name (caseCurrency), for the amounts in the sentence.
 */
export function stoppingFact(input: FactsOfCase, currency: string | null): { fact: string; owed?: string } | null {
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
