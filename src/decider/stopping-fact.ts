// The facts that stop a case's money, whichever decider decided it: a payment a person refunded outside the case, one
// with chargebacks (the facts name the disputes, not whether the merchant won them), an incident already compensated;
// and, for a credit, facts on which the credit target is certain to refuse it before the send: a customer billed in
// another currency than credits are given in (currency_mismatch), a customer whose facts read null (Stripe does not
// know it, or deleted it). The gate re-checks only that the facts did not change since the decision, so money decided
// on such facts would go back a second time, or spend the case's id on a refusal nobody is told what to do about. The
// rules decider declines on them; checkDecision records any money decision on them as MODEL_DEVIATED, so a prompt the
// case's story talked round never sends it.
//
// What a person does then differs. A refund on such facts may be owed after all (a second partial refund for another
// item, a dispute the merchant won): a person reads the fact and re-approves it, or sends it by hand through Interlock.
// A credit on them never goes out through Interlock, re-approved or not (`instead`): the credit target credits an
// incident once and refuses any credit for one others compensated, even in part (incident_already_compensated), and a
// credit in another currency than the customer's (currency_mismatch). A remainder still owed is credited by hand in
// the Stripe Dashboard; money owed for another incident goes under that incident's own id.
import { currencyCode, moneyText } from '../core/money-text.js';
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

/** A currency the facts name under `name` (a lowercase ISO code), or null. */
function currencyIn(facts: Record<string, unknown> | undefined, name: string): string | null {
  return currencyCode(facts?.[name]);
}

/** The parts of a case the stopping facts are read from. */
export type FactsOfCase = Pick<DecisionCase, 'kind' | 'approval' | 'facts' | 'incident'>;

/**
 * A fact that stops the case's money. `fact`: a sentence naming it. `owed`: when a person sends the money after all, by
 * re-approving it or by hand through Interlock (absent: if the customer is still owed money). `instead`, set when
 * Interlock cannot send it at all (the target refuses it before the send, re-approved or not): what a person does
 * instead, as a clause that follows a colon.
 */
export type StoppingFact = { fact: string; owed?: string; instead?: string };

/** The clause of a credit Interlock will not send: no re-approval or hand-sent request through it goes out either. */
function notThroughInterlock(code: string): string {
  return `refused before the send (${code}), re-approved or sent with POST /v1/credits (npx interlock credit) alike`;
}

/**
 * The fact that stops the case's money, as a sentence naming it, and what a person does after all; or null when the
 * facts show none. A chargeback stops a refund whatever became of it: the facts name the disputes, not how they ended,
 * and one the merchant won returned nothing to the customer, so the person reading the decline checks the dispute
 * before sending anything. `currency`: the one the facts name (caseCurrency), for the amounts in the sentence.
 */
export function stoppingFact(input: FactsOfCase, currency: string | null): StoppingFact | null {
  const subject = subjectId(input.approval);
  if (input.kind === 'refund') {
    const payment = input.facts.get_payment;
    const chargebacks = chargebacksIn(payment);
    if (chargebacks.length > 0) return { fact: `Payment ${subject} has chargebacks (${chargebacks.slice(0, 5).join(', ')}${chargebacks.length > 5 ? ` and ${chargebacks.length - 5} more` : ''}): a refund beside a chargeback returns the money twice unless the merchant won the dispute, and the facts read at Stripe do not say how it ended`, owed: 'if the dispute was won by the merchant and the customer is still owed money' };
    const refunded = centsIn(payment, 'refunded_by_others');
    if (refunded > 0) return { fact: `Payment ${subject} was refunded ${moneyText(refunded, currency)} already, outside this case (refunded_by_others in the facts read at Stripe)` };
    return null;
  }
  const account = input.facts.get_account;
  const incident = input.incident ?? '(none named)';
  // Read and null: Stripe answered that it does not know the customer (never there, or deleted). Not read at all (a
  // target without the fact) stops nothing.
  if (account !== undefined && Object.hasOwn(account, 'incident_compensation') && account['incident_compensation'] === null) {
    return {
      fact: `The facts of customer ${subject} could not be read at Stripe (incident_compensation is null in the facts read there): Stripe does not know the customer, or it was deleted, and no credit can be given to it`,
      instead: `a person checks customer ${subject} in the Stripe Dashboard and, if the customer is still owed money, submits a new case naming the customer's live id`,
    };
  }
  const compensated = centsIn(account, 'incident_compensation');
  if (compensated > 0) {
    return {
      fact: `Customer ${subject} was given ${moneyText(compensated, currency)} for incident ${incident} already (incident_compensation in the facts read at Stripe)`,
      instead: `Interlock credits an incident once, so a credit for incident ${incident} is ${notThroughInterlock('incident_already_compensated')}: if the customer is still owed money, a person credits the remainder by hand in the Stripe Dashboard (the customer's credit balance), or, if it is owed for a separate incident, sends it under that incident's id (a new case, or POST /v1/credits naming it)`,
    };
  }
  // A customer billed in another currency: Stripe keeps a balance per currency, so the credit would not reach its bill.
  const billedIn = currencyIn(account, 'customer_currency');
  if (billedIn !== null && currency !== null && billedIn !== currency) {
    return {
      fact: `Customer ${subject} is billed in ${billedIn} (customer_currency in the facts read at Stripe), and credits are given in ${currency} (currency, INTERLOCK_CREDIT_CURRENCY): Stripe applies a credit only to invoices in its own currency, and a ${currency} credit would never reach this customer's bill`,
      instead: `Interlock gives credits in ${currency} only, so a credit to this customer is ${notThroughInterlock('currency_mismatch')}: if the customer is still owed money, a person credits it by hand in ${billedIn} in the Stripe Dashboard (the customer's credit balance)`,
    };
  }
  return null;
}
