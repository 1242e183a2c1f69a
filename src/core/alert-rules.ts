// Which alerts a receipt calls for, from its verification (issue 10 §4). Pure: the facts worker and the
// reconciler raise what this returns after appending what they learned. Also the text of the alert recovery raises
// for a send Stripe keeps giving no definite answer to (sendUnanswered). `failed_after_landed` is also a credit's that
// landed in a currency the customer is not billed in: the money the gate reported as given did not reach the customer.
import { compensationsText, isChargeback, type DisputeFact, type Exposure, type RefundFact } from './final-money.js';
import { moneyText } from './money-text.js';
import type { Verification } from './verify.js';

/**
 * The kinds the facts decide: raised while a receipt calls for them, resolved by the facts once it no longer does.
 * The others (`not_judged`, `send_unanswered`) are about effects the facts say nothing of; their own workers resolve them.
 */
export const FACT_ALERT_KINDS = ['exposure', 'failed_after_landed', 'late_landing', 'compensated_twice'] as const;

export type AlertDraft = {
  kind: (typeof FACT_ALERT_KINDS)[number];
  centsAtStake: number;
  /**
   * The currency `centsAtStake` counts in (lowercase ISO code), from what the alert is about: the refund's commit
   * result, the credit's own. Null when nothing recorded says it; the amount then reads as of a currency unknown
   * (moneyText), never as dollars.
   */
  currency: string | null;
  refund: string | null;
  disputes: string[];
  /**
   * Each of `disputes`' status, in the same order, as the facts that drafted the alert read it: how a raise tells that
   * a dispute was decided (won or lost) after a person resolved the alert (src/redis/alerts.ts, raise).
   */
  disputeStatuses: string[];
  /** compensated_twice: the others' compensations it names (credit notes, then balance credits). */
  compensations?: string[];
  sentence: string;
  action: string;
};


/**
 * How to take a credit back so that its receipt sees it: a debit (a positive amount) on the customer's balance, in the
 * credit's currency, whose metadata names the effect (src/facts/apply.ts counts only debits labelled with it) and the
 * incident (so the credit target nets it out of the incident's compensation before another credit is sent,
 * src/stripe/credit-target.ts incidentCompensation). Interlock has no command that posts one: Stripe's API does.
 */
function takeBack(cents: number | null, currency: string | null, effectId: string | null, incident: string | null): string {
  const amount = cents === null ? "the credit's amount" : currency === null ? `${cents} cents` : moneyText(cents, currency);
  const params = [`\`amount=${cents ?? '<cents>'}\``, `\`currency=${currency ?? "<the credit's currency>"}\``, `\`metadata[interlock_effect_id]=${effectId ?? '<effect id>'}\``];
  if (incident !== null) params.push(`\`metadata[interlock_incident]=${incident}\``);
  const last = params.pop() ?? '';
  return `a debit of ${amount} on the customer's balance (the alert's subject), labelled with this effect: \`POST /v1/customers/<customer>/balance_transactions\` with ${params.join(', ')} and ${last} (Interlock has no command that posts it). Only a debit whose metadata carries interlock_effect_id counts as this credit taken back`;
}

/**
 * The chargebacks on a refund's charge (a dispute fact without a charge is taken to be on it), the lost ones among
 * them, and what those returned to the customer (cents): what a failed refund's alert counts as no longer owed.
 */
function chargebacksOn(refund: RefundFact, disputes: readonly DisputeFact[]): { chargebacks: DisputeFact[]; lost: DisputeFact[]; lostCents: number } {
  const chargebacks = disputes.filter((dispute) => isChargeback(dispute.status) && (refund.charge === null || dispute.charge === null || dispute.charge === refund.charge));
  const lost = chargebacks.filter((dispute) => dispute.status === 'lost');
  return { chargebacks, lost, lostCents: lost.reduce((sum, dispute) => sum + (dispute.amount ?? 0), 0) };
}

/** Stripe's refund failure reason when the refund's charge was charged back while the refund was pending. */
const DISPUTED_FAILURE = 'charge_for_pending_refund_disputed';

/**
 * What to do about a refund that failed after it landed, by the payment's disputes. Only a chargeback moves money
 * (final-money.ts, isChargeback), and only one on the refund's charge gives back what the refund owed (as for
 * exposure; a fact without a charge is taken to be on it): one still open (or under appeal) returns it to the
 * customer if the merchant loses, and a lost one already has, as far as its amount goes; an inquiry, a won or closed
 * dispute never will, so only a new refund can. A refund Stripe failed with `charge_for_pending_refund_disputed` is
 * Stripe's own word that its charge is charged back: until the facts record that chargeback decided (won or lost), it
 * is advised as an open one, whatever the dispute facts recorded so far say. The dispute's own events can come after
 * `refund.failed`, or not at all (dropped, a listener restarted), and facts that still show the inquiry, or no dispute,
 * would otherwise advise refunding again while the chargeback may return the same money.
 */
function failedRefundAction(refund: RefundFact, disputes: readonly DisputeFact[]): string {
  const money = (cents: number) => moneyText(cents, refund.currency ?? null);
  const { chargebacks, lost, lostCents } = chargebacksOn(refund, disputes);
  const ids = lost.map((dispute) => dispute.id).join(', ');
  // A refund whose amount is not on the receipt cannot be shown covered: never tell the operator not to refund on a guess.
  if (lost.length > 0 && refund.amount !== null && lostCents >= refund.amount) return `The customer already got the money back through the lost chargeback ${ids}. Tell the customer; do not refund again.`;
  const owed = refund.amount === null ? null : refund.amount - lostCents;
  const partly = lost.length === 0 ? '' : `The lost chargeback ${ids} gave the customer back ${money(lostCents)}${refund.amount === null ? ", and the refund's amount is not on the receipt (check it at Stripe)" : ` of the ${money(refund.amount)} refund: ${money(owed ?? 0)} is still owed`}. `;
  if (chargebacks.some((dispute) => dispute.status !== 'won' && dispute.status !== 'lost')) return `${partly}The charge is disputed: the dispute will return the money if it is lost. Tell the customer; do not refund again unless the dispute is won by the merchant.`;
  // A charge has one dispute at Stripe: once a chargeback on it is recorded won or lost, the failure's chargeback is that
  // one, decided, and the branches below advise by its end.
  if (refund.failureReason === DISPUTED_FAILURE && chargebacks.length === 0) return `The charge is charged back: Stripe failed the refund for it (${DISPUTED_FAILURE}), though the facts do not record the chargeback yet. The dispute will return the money if it is lost. Tell the customer; do not refund again unless the dispute is won by the merchant.`;
  if (lost.length > 0) return `${partly}Tell the customer, and decide whether to refund ${owed === null ? 'what is still owed' : money(owed)} again under a new approval (a new request).`;
  return 'Tell the customer, and decide whether to refund again under a new approval (a new request).';
}

/**
 * What to do about a refund a chargeback returned again, by where each chargeback stands: one awaiting a response (or an
 * appeal's) can still be answered with the refund as evidence; one under review waits for the issuer's decision; a lost
 * one is final (as failedRefundAction reads it): the merchant paid the customer twice, and only the customer can give
 * one back. Won chargebacks are no exposure (final-money.ts).
 */
function exposureAction(exposure: Exposure): string {
  // What the customer got twice: the overlap, once the chargeback's fact read its charge; before that, at most the refund.
  const twice = exposure.chargeCents === null ? `the ${moneyText(exposure.refundCents, exposure.currency)} refund` : moneyText(exposure.cents, exposure.currency);
  const at = (statuses: readonly string[]) => exposure.disputes.filter((_, i) => statuses.includes(exposure.statuses[i] ?? ''));
  const answer = at(['needs_response', 'appeal_needs_response']);
  const review = at(['under_review', 'appeal_under_review']);
  const lost = at(['lost']);
  const steps = [
    answer.length === 0 ? null : `Reply to dispute ${answer.join(', ')} with refund ${exposure.refund} as evidence (the customer was already refunded), or accept the loss.`,
    review.length === 0 ? null : `Dispute ${review.join(', ')} is under review: wait for the issuer's decision. If it is lost, the merchant paid both the refund and the chargeback: ask the customer to return ${twice}, or write it off.`,
    lost.length === 0 ? null : `Dispute ${lost.join(', ')} was lost: the merchant paid both the refund and the chargeback. Ask the customer to return ${twice}, or write it off.`,
  ].filter((step) => step !== null);
  return steps.length > 0 ? steps.join(' ') : `Reply to dispute ${exposure.dispute} with refund ${exposure.refund} as evidence (the customer was already refunded), or accept the loss.`;
}

export function alertsFor(verification: Verification): AlertDraft[] {
  const alerts: AlertDraft[] = [];
  const { exposure, finalMoney, compensatedTwice } = verification;
  if (exposure) {
    const money = (cents: number) => moneyText(cents, exposure.currency);
    // A chargeback is the payment's: each of its refunds' receipts records it. Read with the charge's refunds, each
    // alert counts this refund's share of the overlap (the refunds on the charge share it, the newest first, so no two
    // receipts count the same money) and names the payment's total beside it. Without them (the charge held only this
    // refund when read, or the facts were recorded before) it counts the overlap up to this refund and says another
    // refund may count it too. A chargeback recorded before facts read its charge counts whole, as it did then.
    const shared = exposure.newerCents !== null && exposure.paymentTwiceCents !== null;
    const overlap =
      exposure.chargeCents === null || exposure.refundedCents === null ? null
      : shared ? `on the ${money(exposure.chargeCents)} charge, of which ${money(exposure.refundedCents)} was refunded, ${money(exposure.paymentTwiceCents ?? exposure.cents)} was returned twice in all, ${money(exposure.cents)} of it`
      : `on the ${money(exposure.chargeCents)} charge, of which ${money(exposure.refundedCents)} was refunded, ${money(exposure.cents)} was returned twice`;
    alerts.push({
      kind: 'exposure',
      centsAtStake: exposure.cents,
      currency: exposure.currency,
      refund: exposure.refund,
      disputes: exposure.disputes,
      disputeStatuses: exposure.disputes.map((_, i) => exposure.statuses[i] ?? ''),
      sentence:
        overlap === null
          ? `The ${money(exposure.refundCents)} refund ${exposure.refund} and the ${money(exposure.chargebackCents)} chargeback ${exposure.disputes.join(', ')} both took money from the merchant: ${money(exposure.cents)} at stake with this refund (another refund of the payment counts the chargeback too).`
          : `The ${money(exposure.refundCents)} refund ${exposure.refund} and the ${money(exposure.chargebackCents)} chargeback ${exposure.disputes.join(', ')} both took money from the merchant: ${overlap}, at stake with this refund (${shared ? "the refunds on the charge share what was returned twice, the newest first: no other refund's receipt counts this part" : 'another refund of the payment may count the chargeback too'}).`,
      action: exposureAction(exposure),
    });
  }
  // The refund whose facts decided the final money: the committed one, not another recorded on the effect first.
  const refund = finalMoney.refund ?? finalMoney.refunds[0] ?? null;
  if (verification.answer === 'returned' && finalMoney.status === 'not_returned' && refund !== null && verification.happened === true) {
    alerts.push({
      kind: 'failed_after_landed',
      // What the customer is still owed, as the action says: lost chargebacks on the refund's charge gave part or all
      // of it back (a refund whose amount the receipt lacks counts 0, as before: the action says to check it at Stripe).
      centsAtStake: refund.amount === null ? 0 : Math.max(0, refund.amount - chargebacksOn(refund, finalMoney.disputes).lostCents),
      currency: refund.currency ?? null,
      refund: refund.id,
      disputes: finalMoney.disputes.map((dispute) => dispute.id),
      disputeStatuses: finalMoney.disputes.map((dispute) => dispute.status),
      sentence: `Refund ${refund.id} was accepted, then failed at Stripe (${finalMoney.failureReason ?? 'no reason given'}): the customer did not get the money the gate reported as sent.`,
      action: failedRefundAction(refund, finalMoney.disputes),
    });
  }
  // A credit that landed in a currency the customer is not billed in: the gate answered returned, and the customer got
  // nothing off its invoices. A refund's branch above never fires for a credit (a credit has no refund). What is at
  // stake, and what the debit the action asks for takes, is what is left of the credit after labelled debits took part
  // of it back: asking for the whole credit again would leave the customer owing the excess in the credit's currency.
  const mismatch = finalMoney.currencyMismatch;
  if (mismatch !== undefined && refund === null && verification.answer === 'returned') {
    const { cents: left, creditCents } = mismatch;
    const partly = left !== null && creditCents !== null && left < creditCents;
    alerts.push({
      kind: 'failed_after_landed',
      centsAtStake: left ?? 0,
      currency: mismatch.currency,
      refund: mismatch.credit,
      disputes: [],
      disputeStatuses: [],
      sentence: `Balance credit ${mismatch.credit}${creditCents === null ? '' : ` (${moneyText(creditCents, mismatch.currency)}${partly ? `, of which ${moneyText(left, mismatch.currency)} is left after labelled debits took part of it back` : ''})`} landed in ${mismatch.currency}, but the customer is billed in ${mismatch.customerCurrency} (set after the gate checked it, while the credit was on its way): Stripe applies a ${mismatch.currency} balance only to ${mismatch.currency} invoices, so the customer got nothing off its bill, while the gate reported the credit as given.`,
      action: `Take ${partly ? 'what is left of ' : ''}the credit back with ${takeBack(left, mismatch.currency, verification.effectId, null)}; the alert resolves itself once it is seen. Then, unless the customer was compensated otherwise, compensate the customer in ${mismatch.customerCurrency} by hand: a new request for the same incident is refused while this credit holds it.`,
    });
  }
  // A credit still unused when Stripe deleted its customer: never invoiced again, the customer got nothing off a bill,
  // while the gate reported the credit as given. Nothing at Stripe can take it back or pass it on: a person decides.
  const deletion = finalMoney.customerDeleted;
  if (deletion !== undefined && refund === null && verification.answer === 'returned') {
    const currency = deletion.currency ?? mismatch?.currency ?? null;
    alerts.push({
      kind: 'failed_after_landed',
      centsAtStake: deletion.cents ?? 0,
      currency,
      refund: deletion.credit,
      disputes: [],
      disputeStatuses: [],
      sentence: `Balance credit ${deletion.credit}${deletion.cents === null ? '' : ` (${moneyText(deletion.cents, currency)} of it)`} was still unused when the customer was deleted at Stripe: Stripe never invoices a deleted customer, so the customer got nothing off a bill, while the gate reported the credit as given.`,
      action: 'Unless the customer was compensated otherwise, compensate them by hand (a refund to their card, or a credit on the customer they use now); then resolve this alert (`interlock alerts resolve <alert id> --by <name>`).',
    });
  }
  // A credit whose customer's balance moved after the last read, and was deleted before the move could be read (final
  // money `unknown`, `balance_unread`): the gate answered returned, and whether the customer kept it, used it, or had it
  // taken back cannot be told from Stripe any more. Raised as failed_after_landed, the kind a credit that did not reach
  // the customer raises, with what is left of it at stake: a person looks and decides.
  const unread = finalMoney.balanceUnread;
  if (unread !== undefined && refund === null && verification.answer === 'returned') {
    const currency = unread.currency;
    alerts.push({
      kind: 'failed_after_landed',
      centsAtStake: unread.cents ?? 0,
      currency,
      refund: unread.credit,
      disputes: [],
      disputeStatuses: [],
      sentence: `Whether balance credit ${unread.credit}${unread.cents === null ? '' : ` (${moneyText(unread.cents, currency)} of it)`} reached the customer cannot be told: the customer's balance moved${unread.event === null ? '' : ` (event ${unread.event})`} and Stripe deleted the customer before the move was read, and Stripe no longer lists a deleted customer's balance transactions. A debit taking the credit back, an invoice using it and another credit all look the same from the event.`,
      action: "Look at the customer's invoices and balance history in the Dashboard (a deleted customer's events and invoices stay there): if the credit was used on a bill, or a debit labelled with this effect took it back, nothing is owed; if it was still in the balance at the deletion, compensate the customer by hand. Then resolve this alert (`interlock alerts resolve <alert id> --by <name>`).",
    });
  }
  if (verification.lateLanding) {
    alerts.push({
      kind: 'late_landing',
      // A refund's own amount when its facts are in; a credit has none there, so the amount its send moved.
      centsAtStake: refund?.amount ?? verification.lateLanding.cents ?? 0,
      // The landed object's own (a refund's or a balance credit's summary names it); else what the facts say of it.
      currency: verification.lateLanding.currency ?? refund?.currency ?? mismatch?.currency ?? compensatedTwice?.currency ?? null,
      refund: verification.lateLanding.evidence,
      disputes: [],
      disputeStatuses: [],
      sentence: `A send landed after the gate had settled the effect as ${verification.lateLanding.after ?? 'open'}: money moved that the answer did not report.`,
      action: 'Check the effect at Stripe, and treat it as sent: its amount was charged to the approval and the subject again, which puts them over their cap if another request spent that room meanwhile. Resolve this alert once the customer has been told (`interlock alerts resolve <alert id> --by <name>`).',
    });
  }
  if (compensatedTwice) {
    const { creditNotes, balanceCredits } = compensatedTwice;
    const money = (cents: number) => moneyText(cents, compensatedTwice.currency);
    // What is left of this credit: what a debit taking it back takes.
    const left = compensatedTwice.ownCents === null ? null : compensatedTwice.ownCents - compensatedTwice.reversedCents;
    const theirs = [creditNotes.length > 0 ? `credit note ${creditNotes.join(', ')}` : null, balanceCredits.length > 0 ? `balance credit ${balanceCredits.join(', ')}` : null].filter((part) => part !== null).join(' and ');
    // Stripe keeps a balance per currency: billing's credit in another currency is taken back only by a debit in it.
    const abroad = compensatedTwice.elsewhere.some((item) => item.kind === 'balance credit') ? ` in the currency ${balanceCredits.length > 1 ? 'each' : 'it'} is in` : '';
    const undo = [creditNotes.length > 0 ? `void credit note ${creditNotes.join(', ')} in billing` : null, balanceCredits.length > 0 ? `debit the customer's balance for billing's credit ${balanceCredits.join(', ')}${abroad}${compensatedTwice.incident === null ? '' : ` with \`metadata[incident]=${compensatedTwice.incident}\` (only a debit tagged with the incident takes billing's credit back)`}` : null].filter((part) => part !== null).join(' and ');
    alerts.push({
      kind: 'compensated_twice',
      centsAtStake: compensatedTwice.cents,
      currency: compensatedTwice.currency,
      refund: creditNotes[0] ?? balanceCredits[0] ?? null,
      disputes: [],
      disputeStatuses: [],
      compensations: [...creditNotes, ...balanceCredits],
      sentence: `The customer was compensated twice for ${compensatedTwice.incident === null ? 'one incident' : `incident ${compensatedTwice.incident}`}: this effect's ${compensatedTwice.ownCents === null ? '' : `${money(compensatedTwice.ownCents)} `}balance credit landed and billing's ${theirs} (${compensationsText(compensatedTwice)}) covers it too.`,
      action: `Decide which compensation stands: ${undo}, or take this credit back with ${takeBack(left, compensatedTwice.currency, verification.effectId, compensatedTwice.incident)}. The alert resolves itself once the note is void or names another incident, or once that debit is seen; otherwise resolve it (\`interlock alerts resolve <alert id> --by <name>\`).`,
    });
  }
  return alerts;
}

/**
 * An open effect whose sends have had no definite answer for `forMs` (Stripe answering 500, requests timing out):
 * recovery keeps looking it up and resending under its key until Stripe's idempotency window ends, then settles it.
 * `lastAnswer` is what the last request got, when this worker saw it; `currency` the amount's, when the caller knows it
 * (currencyOfEffect: the effect's `currency` premise; for a credit without one, the configured credit currency).
 */
export function sendUnanswered(input: { kind: 'refund' | 'credit'; subject: string; cents: number; currency?: string | null; forMs: number; lastAnswer: string | null; windowEndsAt: number; now: number }) {
  const money = (cents: number) => moneyText(cents, input.currency ?? null);
  const minutes = (ms: number) => `${Math.max(1, Math.round(ms / 60_000))} min`;
  return {
    kind: 'send_unanswered' as const,
    centsAtStake: input.cents,
    currency: input.currency ?? null,
    refund: null,
    disputes: [],
    // The lines Stripe's own error carries are quoted by the gate already (quoteError).
    sentence: `Stripe has given no definite answer to the ${money(input.cents)} ${input.kind === 'refund' ? 'refund' : 'balance credit'} on ${input.subject} for ${minutes(input.forMs)}: ${input.lastAnswer === null ? 'the last request got none (the worker\'s log has its error)' : `the last request ended with: ${input.lastAnswer}`}. Whether the money moved is not known yet.`,
    action: `Check Stripe's status page and the payment or customer in the Dashboard. Do nothing to the effect and do not send the money another way: recovery keeps looking it up and resending under the same idempotency key for about ${minutes(Math.max(0, input.windowEndsAt - input.now))} more, then settles it. This alert resolves itself when the effect settles.`,
  };
}
