// The offline decider: without ANTHROPIC_API_KEY every case is decided by this rule, so every scenario and test
// runs on a machine with no key and no network. The rule is the one support approved: the approved amount, on the
// case's own kind, unless the facts the worker read for the case (the same ones the model decider is given) show the
// money went back already, or may have: a payment a person refunded, one with chargebacks (the facts name the
// disputes, not whether the merchant won them), an incident already compensated; or that the credit target is certain
// to refuse the credit before the send (a customer billed in another currency, one Stripe does not know). Then it
// declines, saying which fact, and what a person who checked it does: sends a refund by hand; credits what is still
// owed of a compensated incident by hand in the Dashboard, since Interlock credits an incident once (stopping-fact.ts).
// The gate re-checks only that the facts did not change since the decision, so a
// refund decided on a payment already refunded would go out a second time: the model decider is told to decline such
// a case (its prompt), and checkDecision records any money decided on those facts as MODEL_DEVIATED (stopping-fact.ts).
// The approved amount is what is left of the approval's cap (centsLeftOf): the gate refuses more than that, so asking
// for the whole cap of an approval half used would only be refused; an approval with nothing left is declined here.
// A refund is also at most what the facts say the payment may still return (`refundable`): a $20 approval on a $10
// payment asks $10, since the target refuses more before the send and the case id would be spent on nothing; a
// payment with nothing refundable is declined, naming the fact.
import { MAX_AMOUNT_CENTS } from '../core/effects.js';
import { moneyText } from '../core/money-text.js';
import { caseCurrency, centsLeftOf, parseCase, refundableOf, subjectId, type Decider, type Decision, type DecisionCase, type DeclineDecision } from './case.js';
import { stoppingFact } from './stopping-fact.js';

/** The `model` the rules decider writes into PROPOSED's `decision`, and so into receipts. */
export const RULES_MODEL = 'rules';

/** The support API route and the CLI command that send a case's kind of money. */
function sendsBy(input: DecisionCase): string {
  return input.kind === 'refund' ? 'POST /v1/refunds (npx interlock refund)' : 'POST /v1/credits (npx interlock credit)';
}

/**
 * How a person sends the money by hand when, having read the facts, they find it is still owed: under an approval that
 * covers it. The case's own is named with how to see whether it still can: the decider does not know its uses and room
 * (another case may have spent them, as the refund that stopped this one may have).
 */
function byHand(input: DecisionCase): string {
  return `${sendsBy(input)} under an approval that covers it (${input.approval.id}, if it has a use and room left: npx interlock approvals describe ${input.approval.id})`;
}

/**
 * `owed`: when a person sends the money by hand after reading the facts (by default, if the customer is still owed it).
 * `instead`: what a person does when Interlock cannot send it at all (StoppingFact), said in place of sending it by hand.
 */
function decline(input: DecisionCase, fact: string, owed = 'if the customer is still owed money', instead?: string): DeclineDecision {
  const then = instead ?? `${owed}, a person sends it with ${byHand(input)}`;
  const reason = `${fact}, so no ${input.kind} was proposed for case ${input.caseId}. Nothing was sent, and this case used nothing of approval ${input.approval.id}: ${then}.`;
  return { action: 'decline', reason, model: RULES_MODEL, text: `rules: declined on the facts. ${reason}` };
}

/**
 * The decline of a case with nothing left to ask for (effects under its approval hold or sent all of its cap, or used
 * every use of it, or effects on its scope all of the cap set there), or null when something is: no decider asks for
 * money the gate would refuse at once (OVER_CAP, LEASE), and no model is asked at all.
 */
export function nothingLeft(input: DecisionCase): DeclineDecision | null {
  if (centsLeftOf(input.approval) > 0) return null;
  const { id, scope, capCents, leftBy } = input.approval;
  const currency = caseCurrency(input);
  const newApproval = `a person grants a new approval that covers it and submits a new case under it, or sends it with ${sendsBy(input)} under that approval`;
  const [why, then] =
    leftBy === 'subject_cap'
      ? [`The cap set on ${scope} lets nothing more move (effects on it hold or sent all of it, or it is 0)`, `a person who may raises that cap (npx interlock caps set ${scope} <cents>) and submits a new case`]
      : leftBy === 'uses'
        ? [`Approval ${id} has no use left: effects under it used every one`, newApproval]
        : [`Approval ${id} has nothing left of its ${moneyText(capCents, currency)} cap: effects under it hold or sent all of it`, newApproval];
  const reason = `${why}, so no ${input.kind} was proposed for case ${input.caseId} and no model was asked. Nothing was sent: if the customer is still owed money, ${then}.`;
  return { action: 'decline', reason, model: RULES_MODEL, text: `rules: declined, nothing is left to send under the approval. ${reason}` };
}

export function decideByRules(input: DecisionCase): Decision {
  // In the currency the facts name (the amount is in its smallest unit); never dollars, which ¥5,000 is not.
  const currency = caseCurrency(input);
  const stopped = stoppingFact(input, currency);
  if (stopped !== null) return decline(input, stopped.fact, stopped.owed, stopped.instead);
  const spent = nothingLeft(input);
  if (spent !== null) return spent;
  const refundable = refundableOf(input);
  if (refundable === 0) {
    return decline(
      input,
      `Payment ${subjectId(input.approval)} has nothing left to refund (refundable is ${moneyText(0, currency)} in the facts read at Stripe: its charge failed or was not captured, or it has none)`,
      'if the customer is still owed money once the payment can be refunded',
    );
  }
  // What is left of the approved amount, at most what one effect may move (an approval's cap may cover several) and
  // what the payment may still return.
  const leftCents = centsLeftOf(input.approval);
  const byRefundable = refundable !== null && refundable < Math.min(leftCents, MAX_AMOUNT_CENTS);
  const amountCents = byRefundable ? refundable : Math.min(leftCents, MAX_AMOUNT_CENTS);
  const approvedBy = input.approval.approver === undefined ? '' : ` by ${input.approval.approver}`;
  const whole = leftCents === input.approval.capCents;
  // Said as what holds it: the approval's own use, or the cap set on its scope (nothing of the approval need be used).
  const capped = input.approval.leftBy === 'subject_cap';
  const cap = moneyText(input.approval.capCents, currency);
  const approved = byRefundable
    ? `all that is still refundable of the payment (refundable in the facts read at Stripe), within the ${cap} approved`
    : whole
      ? 'the amount approved'
      : capped
        ? `what the cap set on ${input.approval.scope} lets move of the ${cap} approved`
        : `what is left of the ${cap} approved`;
  const rule = byRefundable ? 'what is still refundable, within the approved amount' : whole ? 'the approved amount' : capped ? `what the cap set on ${input.approval.scope} lets move of the amount` : 'what is left of the approved amount';
  switch (input.kind) {
    case 'refund': {
      const reason = `Goodwill refund of ${moneyText(amountCents, currency)} for case ${input.caseId}, ${approved}${approvedBy} under ${input.approval.id}.`;
      return { action: 'refund', amountCents, reason, model: RULES_MODEL, text: `rules: ${rule}. ${reason}` };
    }
    case 'credit': {
      const incident = input.incident === undefined ? '' : ` for incident ${input.incident}`;
      // The description is the balance transaction's, which the customer reads on their invoice: an amount whose
      // currency the facts do not name is left out, not written as minor units of a currency unknown.
      const amount = currency === null ? '' : ` of ${moneyText(amountCents, currency)}`;
      const description = `Goodwill credit${amount}${incident} (case ${input.caseId}).`;
      return { action: 'credit', amountCents, description, model: RULES_MODEL, text: `rules: ${rule}, approved${approvedBy} under ${input.approval.id}. ${description}` };
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
