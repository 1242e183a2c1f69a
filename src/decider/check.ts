// The decision judged against the approval before anything is proposed, and an accepted decision turned into
// the proposal's effect and `decision` fields. Pure, like the core: the same answer on every worker and replay.
//
// MODEL_DEVIATED is a verdict, not a thrown error. It is an outcome to record ("the model asked for more than
// was approved, nothing was sent"), spelled like the gate's outcome strings, not a failure of the service: the
// decider worked, the approval held. A caller records it and ends the case; it never retries it.
//
// An amount over what the facts the decider was given say the payment may still return (`refundable`) is
// MODEL_DEVIATED too, as an amount over what is left of the approval is: it is a decision outside what may be sent
// (the target refuses it before the send), not a decline (the decider asked for money) nor a failure (it answered
// well). A re-approval sends the amount asked for, which the target would refuse as well: the person reading the inbox
// item dismisses it and sends what is refundable under a new case id (or by hand) if it is still owed.
//
// Money decided on facts that show it went back already (stopping-fact.ts: a payment refunded outside the case, a
// chargeback, an incident compensated) is MODEL_DEVIATED too, whichever decider decided it: the gate re-checks only
// that the facts did not change since the decision, so nothing after this check would stop the money going back twice.
// It is a deviation, not a decline, because it may be legitimate (a second partial refund for another item): the
// person who reads the fact in the inbox re-approves it then. Not a credit: the credit target refuses any credit on
// those facts before the send, re-approved or not (an incident others compensated, even in part; a customer billed in
// another currency; one Stripe does not know), so the problem says what a person does instead (StoppingFact.instead),
// and the inbox refuses a re-approval of a credit for an incident compensated (src/inbox/actions.ts).
//
// A well-formed call whose own words name its amount in whole units (`amount_cents: 20` beside "a $20.00 refund") is
// MODEL_DEVIATED too, through the decision's `deviations` (anthropic.ts, amountOfCall): sent as called, a hundredth of
// what the model said would go out and use up the approval, with nobody told. The decision carries the cents it called
// for, the whole-units reading only in its problem: confirming a false flag never sends more than the model asked.
import type { Decision as ProposalDecision } from '../core/entries.js';
import { amountText } from '../core/approval.js';
import type { CreditEffect, EffectKind, RefundEffect } from '../core/effects.js';
import { MAX_AMOUNT_CENTS } from '../core/effects.js';
import { InterlockError } from '../core/errors.js';
import { RESERVED_REQUEST_PREFIXES } from '../core/proposal.js';
import { identifier } from '../core/text.js';
import { caseCurrency, centsLeftOf, refundableOf, subjectId, type CaseApproval, type DecisionCase, type DeclineDecision, type MoneyDecision, type Decision } from './case.js';
import { cleanModelLine, cleanModelText, DECISION_TEXT_MAX_CHARS } from './model-text.js';
import { DESCRIPTION_MAX_CHARS } from './prompts.js';
import { stoppingFact } from './stopping-fact.js';

export const MODEL_DEVIATED = 'MODEL_DEVIATED' as const;

export type DecisionCheck =
  | { verdict: 'accepted'; decision: MoneyDecision }
  | { verdict: 'declined'; decision: DeclineDecision }
  | { verdict: typeof MODEL_DEVIATED; decision: Decision; problems: string[]; message: string };

export type AcceptedDecision = Extract<DecisionCheck, { verdict: 'accepted' }>;

const ACTION_OF: Record<EffectKind, MoneyDecision['action']> = { refund: 'refund', credit: 'credit' };

/**
 * Whether a decision stays inside its approval (the kind of the case, at most the approved cents) and, given the case's
 * facts (`onFacts`: the ones the decider was given), inside what they allow: no money on facts that stop it, and no
 * refund over what they say is refundable. A caller
 * that proposes what this accepts passes the facts; with null only the approval is checked.
 */
export function checkDecision(decision: Decision, approval: CaseApproval, kind: EffectKind, onFacts: Pick<DecisionCase, 'facts' | 'incident'> | null): DecisionCheck {
  if (decision.action === 'decline') return { verdict: 'declined', decision };
  const problems: string[] = [];
  if (decision.action !== ACTION_OF[kind]) problems.push(`the case is a ${kind} and its approval ${approval.id} covers a ${kind}, but the model decided a ${decision.action}`);
  const amount = decision.amountCents;
  const refundable = onFacts === null ? null : refundableOf({ kind, facts: onFacts.facts });
  // Amounts are stated in the case's currency as its facts name it (2000 is $20.00 in usd, ¥2,000 in jpy), and as of a
  // currency unknown when they name none or were not given: never as cents, which yen are not.
  const currency = onFacts === null ? null : caseCurrency({ kind, facts: onFacts.facts });
  const money = (value: number) => amountText(value, currency);
  // An amount above the cap is named as such first, whole or not, safe or not: the person reading it learns the
  // model asked for more (90071992547409920 cents is more, not merely an odd number).
  if (Number.isNaN(amount)) problems.push("no amount of cents was read from the model's decision");
  else if (amount > approval.capCents && approval.capCents <= MAX_AMOUNT_CENTS) problems.push(`the model decided ${money(amount)}, but approval ${approval.id} covers at most ${money(approval.capCents)}`);
  // A policy approval's cap may be above what one effect moves: the limit broken is then the effect's, named as such.
  else if (amount > MAX_AMOUNT_CENTS) problems.push(`the model decided ${money(amount)}, but one ${kind} moves at most ${money(MAX_AMOUNT_CENTS)} (approval ${approval.id} covers ${money(approval.capCents)} in all)`);
  else if (!Number.isSafeInteger(amount) || amount <= 0) problems.push(`the model decided ${String(amount)}, which is not a positive whole number of ${unitsText(currency)}`);
  // Within the cap but over what was left of it, as the model was told: the gate would refuse it (OVER_CAP).
  else if (amount > centsLeftOf(approval)) problems.push(`the model decided ${money(amount)}, but ${leftText(approval, money)}`);
  // Within the approval but over what the facts it was given say the payment may still return: the target would refuse
  // it before the send (amount_exceeds_refundable), with the case's request id spent on it.
  else if (refundable !== null && amount > refundable) problems.push(`the model decided ${money(amount)}, but the facts it was given say only ${money(refundable)} of payment ${subjectId(approval)} are still refundable (refundable)`);
  // A decider's own problems quote the model's answer; whichever decider wrote them, they are recorded as model text is.
  problems.push(...(decision.deviations ?? []).map((problem) => cleanModelText(problem, DECISION_TEXT_MAX_CHARS)));
  const expected = kind === 'refund' ? 'payment:' : 'customer:';
  if (!approval.scope.startsWith(expected)) problems.push(`approval ${approval.id} covers ${approval.scope}, which is not a ${kind === 'refund' ? 'payment' : 'customer'}`);
  const stopped = onFacts === null ? null : stoppingFact({ kind, approval, facts: onFacts.facts, incident: onFacts.incident }, currency);
  if (stopped !== null) {
    const then = stopped.instead ?? `sent, it would return money that went back already, so a person re-approves it only ${stopped.owed ?? 'if the customer is still owed money'}`;
    problems.push(`the model decided a ${decision.action}, but the facts it was given stop the case's money: ${stopped.fact}; ${then}`);
  }
  if (problems.length === 0) return { verdict: 'accepted', decision };
  const message = `${MODEL_DEVIATED}: ${problems.join('; ')}. ${deviationThen(decision, approval, kind, stopped?.instead !== undefined, money)}`;
  return { verdict: MODEL_DEVIATED, decision, problems, message };
}

/**
 * What a person does with a deviated decision, the sentences ending its message (the inbox item's `happened`). Money
 * Interlock cannot send on the facts (`unsendable`: the problem says what to do instead) is not offered for approval.
 * Nor is money of another kind than the case's: the deviation is recorded as the case's own effect (the case's kind,
 * subject and the cents the model asked for), so re-approving a credit the model decided on a refund case would send
 * a refund it never decided; its item offers no re-approval (core/inbox.ts deviatedKind), and this says so and why.
 */
function deviationThen(decision: MoneyDecision, approval: CaseApproval, kind: EffectKind, unsendable: boolean, money: (value: number) => string): string {
  if (decision.action !== ACTION_OF[kind]) {
    const amount = decision.amountCents;
    const sum = Number.isSafeInteger(amount) && amount > 0 && amount <= MAX_AMOUNT_CENTS ? ` of ${money(amount)}` : '';
    const subject = `${kind === 'refund' ? 'payment' : 'customer'} ${subjectId(approval)}`;
    return `Nothing was sent. The model chose a ${decision.action} where the case asks for a ${kind}, so its decision is not offered for re-approval: re-approved, it would send a ${kind}${sum} to ${subject}, which the model never decided. A person dismisses it and, if the customer is still owed money, decides the case again as a new case, under a new case id.`;
  }
  return `Nothing was sent; a person must decide this case${unsendable ? '' : ', or approve the amount the model asked for'}.`;
}

/** What the decider was told is left of `approval`, and why, for a problem naming an ask over it (amounts as `money` writes them). */
function leftText(approval: CaseApproval, money: (value: number) => string): string {
  const left = centsLeftOf(approval);
  if (approval.leftBy === 'uses') return `approval ${approval.id} has no use left (every one is spent)`;
  if (approval.leftBy === 'subject_cap') return `it was told only ${money(left)} may still move on ${approval.scope} (the cap set there)`;
  return `it was told only ${money(left)} of approval ${approval.id}'s ${money(approval.capCents)} were left`;
}

/** The unit a decided amount counts (the smallest of the case's currency), for a problem saying it is no whole number of it. */
function unitsText(currency: string | null): string {
  if (currency === null) return "the smallest unit of the case's currency, which its facts do not name";
  return currency === 'usd' ? 'cents' : `the smallest unit of ${currency.toUpperCase()}`;
}

export type ProposalFields = {
  /** Bound to the case only, so a re-decision after a crash maps to the same effect id and its first payload (I5). */
  requestId: string;
  approval: string;
  effect: RefundEffect | CreditEffect;
  decision: ProposalDecision;
};

/** The request id of a case: `case:<caseId>`, whatever the model decides. */
export function requestIdOf(caseId: string): string {
  return `${RESERVED_REQUEST_PREFIXES.case}${caseId}`;
}

const modelId = identifier(200);

/** The proposal's `decision` field for any decision: a printable model id and bounded, canonical text. */
export function proposalDecision(decision: Decision): ProposalDecision {
  const model = cleanModelLine(decision.model, 200);
  return { model: modelId.safeParse(model).success ? model : 'unknown-model', text: cleanModelText(decision.text, DECISION_TEXT_MAX_CHARS) };
}

/**
 * The proposal fields of an accepted decision: request id, approval, effect and decision. The verdict is checked
 * again here, so a deviated decision can never become an effect even through a cast.
 */
export function proposalFields(accepted: AcceptedDecision, input: DecisionCase): ProposalFields {
  const check = checkDecision(accepted.decision, input.approval, input.kind, input);
  if (check.verdict !== 'accepted') throw new InterlockError('internal', `proposalFields was given a decision that is not accepted (${check.verdict === MODEL_DEVIATED ? check.message : 'declined'}); call checkDecision and propose only what it accepts.`);
  const decision = check.decision;
  const metadata = { case_id: input.caseId };
  let effect: RefundEffect | CreditEffect;
  switch (decision.action) {
    case 'refund':
      effect = { kind: 'refund', paymentIntent: subjectId(input.approval), amount: decision.amountCents, reason: 'requested_by_customer', metadata };
      break;
    case 'credit': {
      if (input.incident === undefined) throw new InterlockError('invalid_request', `Case ${input.caseId} is a credit without an incident; parseCase refuses such a case, so it was built by hand. Name the incident the credit compensates.`);
      // The line the customer reads in their balance history, and the receipt signs: one line, every character seen.
      const description = cleanModelLine(decision.description, DESCRIPTION_MAX_CHARS);
      effect = { kind: 'credit', customer: subjectId(input.approval), amount: decision.amountCents, incident: input.incident, metadata };
      if (description !== '') effect.description = description;
      break;
    }
    default: {
      const never: never = decision;
      return never;
    }
  }
  return { requestId: requestIdOf(input.caseId), approval: input.approval.id, effect, decision: proposalDecision(decision) };
}
