// Post-send facts (DESIGN §8, issue 10 §2): a Stripe event, or a re-read, becomes OBSERVED entries on the receipts
// it concerns, so a receipt's final-money answer follows the money. Events arrive late, twice and out of order, so
// before anything is appended the object is re-read from Stripe (on by default): the fact recorded is the
// object's state now, and its own lifecycle decides (final-money.ts), never the order events came in.
import type { Logger } from 'pino';
import { alertsFor } from '../core/alert-rules.js';
import { closesDispatch, committedEntry, dispatchedEffect, firstProposal, openDispatch } from '../core/decisions.js';
import { currencyOfEffect } from '../core/effect-currency.js';
import { incidentHold } from '../core/effects.js';
import type { Draft, Entry, EntryFields, EntryOf } from '../core/entries.js';
import { sha256Hex, canonicalJson, hasLoneSurrogate, wellFormed } from '../core/json.js';
import { refusalLeftNothing } from '../core/outcomes.js';
import { unsignedReceipt } from '../core/receipt.js';
import { verify } from '../core/verify.js';
import { BALANCE_UNREAD, CUSTOMER_DELETED, creditInBalance, isChargeback } from '../core/final-money.js';
import { errorCode, errorMessage, InterlockError, type ErrorCode } from '../core/errors.js';
import { CREDIT_EVENTS, FACT_EVENTS, REFUND_EVENTS, type ChargeFact, type CreditFact, type DisputeFact, type RefundFact, type StripeEvent, type StripeReader } from '../core/post-send.js';
import type { Alerts } from '../redis/alerts.js';
import type { Journal } from '../redis/journal.js';

export { CREDIT_EVENTS, DISPUTE_EVENTS, FACT_EVENTS, REFUND_EVENTS, type CreditFact, type DisputeFact, type RefundFact, type StripeEvent, type StripeReader } from '../core/post-send.js';

export type Applied = { effectId: string; appended: number; duplicates: number; alerts: string[] };

/** Passes at an effect's alerts while other facts keep coming for it; the worker that appended those redoes them too. */
const ALERT_PASSES = 5;

// What an event's object says is taken only in the forms a re-read from Stripe gives (without the re-read, library mode's
// rereadBeforeAppend: false, it is what is recorded): a signed event may say anything its sender wrote, and a value with
// no canonical form (a lone surrogate) would fail its facts job for good, its fact lost, once it was answered 200.
/** A name (an id, a status, a currency): null unless it is a non-empty string with a canonical form, as if absent. */
const str = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 && !hasLoneSurrogate(value) ? value : null);
/** Words a person reads (a refund's failure_reason, a dispute's reason), each lone surrogate as U+FFFD, as quote() writes it. */
const words = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? wellFormed(value) : null);
const num = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);
/** An amount in minor units, as Stripe states one: a whole number from 0 up; null otherwise (-5, 1.5), as if absent. */
const cents = (value: unknown): number | null => (Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : null);
const idOf = (value: unknown): string | null => str(value) ?? (typeof value === 'object' && value !== null ? str((value as { id?: unknown }).id) : null);

function refundFromObject(object: Record<string, unknown>): RefundFact | null {
  const id = str(object.id);
  if (id === null || object.object !== 'refund') return null;
  const metadata = typeof object.metadata === 'object' && object.metadata !== null ? (object.metadata as Record<string, unknown>) : {};
  const currency = str(object.currency)?.toLowerCase();
  return { id, status: str(object.status) ?? 'unknown', amount: cents(object.amount) ?? 0, charge: idOf(object.charge), paymentIntent: idOf(object.payment_intent), failureReason: words(object.failure_reason), effectId: str(metadata.interlock_effect_id), created: num(object.created), ...(currency === undefined ? {} : { currency }) };
}

function disputeFromObject(object: Record<string, unknown>): DisputeFact | null {
  const id = str(object.id);
  if (id === null || object.object !== 'dispute') return null;
  return { id, status: str(object.status) ?? 'unknown', amount: cents(object.amount) ?? 0, charge: idOf(object.charge), paymentIntent: idOf(object.payment_intent), reason: words(object.reason), created: num(object.created) };
}

type Observed = EntryFields['OBSERVED'];

/**
 * The currency of the refund each refund fact was read from (Stripe's, lowercase). A refund's OBSERVED entry does not
 * carry it (with it, every refund fact recorded before would have a new key, and be recorded again on every effect),
 * but a late landing recorded from the fact does (noteLateLanding): the alerts on the landed refund name its amounts in
 * its own currency, as they do when recovery found the landing.
 */
const refundCurrencies = new WeakMap<Draft<'OBSERVED'>, string>();

function refundObserved(source: Observed['source'], eventId: string | null, eventType: string, refund: RefundFact): Draft<'OBSERVED'> {
  const draft: Draft<'OBSERVED'> = { kind: 'OBSERVED', source, eventId, eventType, objectType: 'refund', objectId: refund.id, status: refund.status, failureReason: refund.failureReason, amount: refund.amount, charge: refund.charge, disputeStatus: null, disputeReason: null, created: refund.created };
  if (refund.currency !== undefined) refundCurrencies.set(draft, refund.currency);
  return draft;
}

/**
 * A dispute fact; with its charge (`charge`, read with it) when it is a chargeback: the charge's amount and what is
 * refunded on it, so the receipt counts as money returned twice only what the chargeback overlaps (deriveExposure).
 */
function disputeObserved(source: Observed['source'], eventId: string | null, eventType: string, dispute: DisputeFact, charge?: ChargeFact): Draft<'OBSERVED'> {
  const draft: Draft<'OBSERVED'> = { kind: 'OBSERVED', source, eventId, eventType, objectType: 'dispute', objectId: dispute.id, status: dispute.status, failureReason: null, amount: dispute.amount, charge: dispute.charge, disputeStatus: dispute.status, disputeReason: dispute.reason, created: dispute.created };
  return charge === undefined || !isChargeback(dispute.status) ? draft : { ...draft, chargeAmount: charge.amount, chargeRefunded: charge.refunded };
}

/**
 * A refund on a chargeback's charge as the charge lists it, read with the chargeback: recorded as a fact about the
 * charge (`objectType` `charge`, `objectId` the refund's id, with its status, amount and `created`), never as a refund
 * of the effect's (final-money.ts, ChargeRefund). The receipts on the payment share the money its chargebacks returned
 * twice among the refunds on the charge, the newest first (deriveExposure), each working its share out from this list.
 */
function chargeRefundObserved(source: Observed['source'], eventId: string | null, eventType: string, refund: RefundFact): Draft<'OBSERVED'> {
  return { kind: 'OBSERVED', source, eventId, eventType, objectType: 'charge', objectId: refund.id, status: refund.status, failureReason: refund.failureReason, amount: refund.amount, charge: refund.charge, disputeStatus: null, disputeReason: null, created: refund.created };
}

/**
 * The refunds to record with the chargebacks among `disputes` (chargeRefundObserved): every refund of the payment on a
 * chargeback's charge read with it (`charges`), the gate's for any effect and those made by hand alike, on a charge that
 * holds two or more (whatever their status). A charge with one refund has nothing to share: its receipt counts the
 * overlap up to that refund, as it did before lists were recorded, and records no more facts.
 */
function refundsToShare(disputes: readonly DisputeFact[], charges: ReadonlyMap<string, ChargeFact>, refunds: readonly RefundFact[]): RefundFact[] {
  const chargedBack = new Set(disputes.flatMap((dispute) => (dispute.charge !== null && isChargeback(dispute.status) && charges.has(dispute.charge) ? [dispute.charge] : [])));
  const on = (charge: string | null) => refunds.filter((refund) => refund.charge === charge);
  return refunds.filter((refund) => refund.charge !== null && chargedBack.has(refund.charge) && on(refund.charge).length > 1);
}

/**
 * A credit fact, as `role` says: `own`, the effect's own balance credit, recorded with its currency and the one the
 * customer is billed in (a credit in another sits in a balance the customer's invoices never use); `reversal`, a debit
 * labelled with the effect taking its credit back, with its currency (one in another currency takes nothing of it
 * back); `re-credit`, a credit labelled with the effect that its send did not make, giving back what a debit took (the
 * only way to undo a take-back: Stripe cannot delete a balance transaction), with its currency and never the
 * customer's (which is how final-money.ts tells it from the effect's own credit), and the incident its metadata names
 * now (null for none: one tagged with the credit's incident is, beyond the debits, a second credit for it);
 * `compensation`, another party's compensation for the credit's incident (a credit note, or a balance credit or debit
 * this effect's send did not make), with the incident its metadata names now (null for none), and a credit note with its
 * currency too (its invoice's, which may not be the credit's: final-money.ts adds only notes in the credit's currency to
 * it, and states one in another in its own). A balance transaction recorded as a compensation in the credit's currency
 * (`creditCurrency`; null: not known, every one counts in it) carries none, as it always did: a currency alone on one
 * would read as a re-credit (turnRoleOf). One in another currency (billing's balance credit in yen beside a usd credit,
 * or a debit in yen netted against it) carries its currency and the customer's, which tells it from a re-credit: it
 * compensates the incident in its own currency, as a credit note in another does (final-money.ts).
 */
function creditObserved(source: Observed['source'], eventId: string | null, eventType: string, credit: CreditFact, role: 'own' | 'reversal' | 're-credit' | 'compensation', creditCurrency: string | null = null): Draft<'OBSERVED'> {
  const draft: Draft<'OBSERVED'> = { kind: 'OBSERVED', source, eventId, eventType, objectType: credit.objectType, objectId: credit.id, status: credit.status, failureReason: null, amount: credit.amount, charge: null, disputeStatus: null, disputeReason: null, created: credit.created };
  switch (role) {
    case 'own':
      return { ...draft, currency: credit.currency, customerCurrency: credit.customerCurrency };
    case 'reversal':
      return { ...draft, currency: credit.currency };
    case 're-credit':
      return { ...draft, currency: credit.currency, incident: credit.incident };
    case 'compensation':
      if (credit.objectType === 'credit_note') return { ...draft, incident: credit.incident, currency: credit.currency };
      return foreignMove(credit, creditCurrency) ? { ...draft, incident: credit.incident, currency: credit.currency, customerCurrency: credit.customerCurrency } : { ...draft, incident: credit.incident };
    default: {
      const never: never = role;
      return never;
    }
  }
}

/** A balance transaction in another currency than the credit's (`creditCurrency`), when both are known. */
const foreignMove = (credit: CreditFact, creditCurrency: string | null) => credit.objectType === 'customer_balance_transaction' && creditCurrency !== null && credit.currency !== null && credit.currency !== creditCurrency;

/** The customer of a customer event (the customer itself) or of a credit note. */
function customerOfEvent(event: StripeEvent): string | null {
  const object = event.data.object;
  if (object.object === 'customer') return str(object.id);
  if (object.object === 'credit_note') return idOf(object.customer);
  return null;
}

/**
 * The key a fact is recorded under once per effect: what it says about which object. The object is re-read before
 * it is recorded, so two events (or an event and a re-read) that find it in the same state are one fact: a
 * redelivered event, a duplicate and a re-read that finds nothing new append nothing.
 */
function fingerprint(draft: Draft<'OBSERVED'>, retag = 0, afterAppeal = false): string {
  const said: unknown[] = [draft.objectType, draft.objectId, draft.status, draft.failureReason, draft.amount, draft.disputeStatus];
  // A dispute lost, appealed and lost again is lost twice: the second is the appeal's end, a fact of its own, and
  // without it the receipt would read "under appeal" for good (the appeal's statuses rank with won and lost,
  // final-money.ts: the newest stands). Only a state after an appeal carries the mark, so every other fact keeps the
  // key it was recorded under.
  if (afterAppeal) said.push('after_appeal');
  // A balance transaction's currency, and the one the customer is billed in, are part of what its fact says: billing can
  // set the customer's currency after the credit was recorded (its first invoice), and the credit then no longer
  // reaches the customer's invoices. Only facts that carry them say so, so facts recorded before keep their keys. A
  // credit note's (its invoice's, which never changes) is recorded once more on a chain whose note fact lacked it.
  if (draft.currency !== undefined) said.push({ currency: draft.currency });
  if (draft.customerCurrency !== undefined) said.push({ customerCurrency: draft.customerCurrency });
  // A chargeback's charge as read with it: a refund made after the chargeback was recorded changes how much of it
  // overlaps the refunds, a fact of its own. Facts recorded before disputes carried it keep their keys. What is refunded
  // on a charge has no lifecycle (a refund comes, or fails), so the latest read recorded stands (final-money.ts), and a
  // read that comes back after another must be recorded again: `retag` (chargeReadTurn) tells the two apart, as it does
  // for a compensation's incident. Only a read that came back carries it, so every other keeps the key it had.
  if (draft.chargeAmount !== undefined) said.push({ chargeAmount: draft.chargeAmount, chargeRefunded: draft.chargeRefunded ?? null, ...(retag > 0 ? { turn: retag } : {}) });
  // A compensation's incident is part of what it says. Metadata has no lifecycle: a note re-tagged away and back names
  // its first incident again, which must be recorded again, so `retag` (how many times the incident recorded for the
  // object changed, compensationTurn) tells the two apart; facts of one state read at once still share a key.
  return `f:${sha256Hex(canonicalJson(draft.incident === undefined ? said : [...said, draft.incident, retag])).slice(0, 32)}`;
}

const APPEAL_STATUSES: ReadonlySet<string> = new Set(['appeal_needs_response', 'appeal_under_review']);

/** The disputes an appeal status was recorded for on an effect's chain: their won or lost now ends the appeal. */
function appealedDisputes(entries: readonly Entry[]): Set<string> {
  const appealed = new Set<string>();
  for (const entry of entries) if (entry.kind === 'OBSERVED' && entry.objectType === 'dispute' && entry.disputeStatus !== null && APPEAL_STATUSES.has(entry.disputeStatus)) appealed.add(entry.objectId);
  return appealed;
}

/**
 * The role a credit fact recorded with an incident plays (creditObserved): a re-credit is a balance transaction that
 * carries its currency and never the customer's; a credit note is always a compensation, whatever currency it carries.
 */
type TurnRole = 're-credit' | 'compensation';

const turnRoleOf = (entry: Observed): TurnRole => (entry.objectType !== 'credit_note' && entry.currency !== undefined && entry.customerCurrency === undefined ? 're-credit' : 'compensation');

/**
 * How many times what is recorded for a compensation or a re-credit turned on the effect's chain, counting `now` (what
 * Stripe says now) when it differs from the latest: the `retag` of its fact's fingerprint. A turn is a change of its
 * incident, or a change of its role (a re-credit whose label went away is recorded as a compensation, and a re-credit
 * again when the label is back) back to a (role, incident) already recorded at this turn: without it the fact coming
 * back has the key of the first and is dropped as a duplicate, and the receipt stops following Stripe. A role change to
 * a pair not recorded at this turn is no turn: its fact is new already (a re-credit's carries its currency), and facts
 * recorded before roles were counted keep their keys (no chain could hold a pair twice at one turn).
 */
function compensationTurn(entries: readonly Entry[], objectId: string, now: { role: TurnRole; incident: string | null }): number {
  let turns = 0;
  let latest: { role: TurnRole; incident: string | null } | undefined;
  const seen = new Set<string>();
  const at = (role: TurnRole, incident: string | null, turn: number) => canonicalJson([role, incident, turn]);
  const step = (role: TurnRole, incident: string | null): number => {
    if (latest === undefined) return turns;
    if (incident !== latest.incident) return turns + 1;
    return role !== latest.role && seen.has(at(role, incident, turns)) ? turns + 1 : turns;
  };
  for (const entry of entries) {
    if (entry.kind !== 'OBSERVED' || entry.objectId !== objectId || entry.incident === undefined) continue;
    const role = turnRoleOf(entry);
    turns = step(role, entry.incident);
    seen.add(at(role, entry.incident, turns));
    latest = { role, incident: entry.incident };
  }
  return step(now.role, now.incident);
}

/** A chargeback's charge as one of its facts read it (disputeObserved): what the fact's key says of it. */
const chargeReadOf = (fact: Pick<Observed, 'chargeAmount' | 'chargeRefunded'>) => canonicalJson([fact.chargeAmount ?? null, fact.chargeRefunded ?? null]);

/**
 * How many times the charge read with a dispute came back, on the effect's chain, to a read already recorded at its
 * turn, counting `now` (the read a job is about to record) when it differs from the latest: the `retag` of its fact's
 * fingerprint. Two jobs append in the other order than they read in (one stalls after its read): without the turn, the
 * read the slower job appended last stands, and every later re-read that finds the charge as Stripe has it, the read
 * recorded before, has that fact's key and is dropped as a duplicate, for good. With it, the next re-read that differs
 * from the latest is recorded again and stands (DESIGN §8: a stale read stands only until the next read). A change to a
 * read not recorded at this turn is no turn (its fact is new already), so chains that never came back keep their keys.
 */
function chargeReadTurn(entries: readonly Entry[], disputeId: string, now: Pick<Observed, 'chargeAmount' | 'chargeRefunded'>): number {
  let turns = 0;
  let latest: string | undefined;
  const seen = new Set<string>();
  const step = (read: string): number => (latest !== undefined && read !== latest && seen.has(canonicalJson([read, turns])) ? turns + 1 : turns);
  for (const entry of entries) {
    if (entry.kind !== 'OBSERVED' || entry.objectType !== 'dispute' || entry.objectId !== disputeId || entry.chargeAmount === undefined) continue;
    const read = chargeReadOf(entry);
    turns = step(read);
    seen.add(canonicalJson([read, turns]));
    latest = read;
  }
  return step(chargeReadOf(now));
}

/**
 * The charge reads that stand on an effect's chain for its chargebacks (final-money.ts weighs the refunds against them,
 * deriveExposure): for each dispute whose latest fact read its charge (disputeObserved), that charge and the read
 * (chargeReadOf). A dispute won, or whose latest fact carries no read (an inquiry, a reader that reads no charges), puts
 * no refund at stake through its charge, and is left out.
 */
function standingChargeReads(entries: readonly Entry[]): { charge: string; read: string }[] {
  const latest = new Map<string, EntryOf<'OBSERVED'>>();
  for (const entry of entries) if (entry.kind === 'OBSERVED' && entry.objectType === 'dispute') latest.set(entry.objectId, entry);
  return [...latest.values()].flatMap((entry) => (entry.charge !== null && entry.chargeAmount !== undefined && entry.disputeStatus !== 'won' ? [{ charge: entry.charge, read: chargeReadOf(entry) }] : []));
}

/**
 * The dispute facts among `drafts` that say what the latest fact recorded for their dispute says (its status, amount and
 * charge read: its key but for the turn and the appeal mark): recorded, they would change nothing the receipt says,
 * which is what a re-read finding nothing new must append (nothing). Their keys alone cannot tell: a chain recorded
 * before chargeReadTurn holds a read that came back under a key with no turn, which the turn counted now puts at turn 1.
 */
function standingReads(entries: readonly Entry[], drafts: readonly Draft<'OBSERVED'>[]): Set<Draft<'OBSERVED'>> {
  return new Set(
    drafts.filter((draft) => {
      const latest = entries.findLast((entry): entry is EntryOf<'OBSERVED'> => entry.kind === 'OBSERVED' && entry.objectType === 'dispute' && entry.objectId === draft.objectId);
      return latest !== undefined && fingerprint(latest) === fingerprint(draft);
    }),
  );
}

/**
 * Whether a charge read this job appended (`ours`, by hash) stands for its dispute on `entries` (the chain read after the
 * append) over another job's read of the charge that differs from it and may be newer: one appended from `since` (the
 * chain's length when this job's reads of Stripe began), in any order against this one's. Which of the two is newer
 * cannot be told from the chain, so the caller reads Stripe again. `readEarlier`: disputes whose charge this job read
 * before `since` (a dispute naming only its charge was routed by that read, before its payment, and so its chains, were
 * known): for them the window reaches back to the latest read recorded by then, which may have been appended after it.
 */
function overtaken(entries: readonly Entry[], ours: ReadonlySet<string>, since: number, readEarlier: ReadonlySet<string>): boolean {
  const disputes = new Set(entries.flatMap((entry) => (entry.kind === 'OBSERVED' && ours.has(entry.hash) ? [entry.objectId] : [])));
  return [...disputes].some((disputeId) => {
    const reads = entries.flatMap((entry, at) => (entry.kind === 'OBSERVED' && entry.objectType === 'dispute' && entry.objectId === disputeId && entry.chargeAmount !== undefined ? [{ entry, at }] : []));
    const latest = reads.at(-1);
    if (latest === undefined || !ours.has(latest.entry.hash)) return false;
    const from = readEarlier.has(disputeId) ? (reads.findLast((read) => read.at < since)?.at ?? since) : since;
    return reads.some((read) => read.at >= from && !ours.has(read.entry.hash) && chargeReadOf(read.entry) !== chargeReadOf(latest.entry));
  });
}

/**
 * The object an effect's send made (the id its COMMITTED found: a refund, or a credit's balance transaction), or the one
 * a late landing recorded; null for neither.
 */
function committedRefundOf(entries: readonly Entry[]): string | null {
  const committed = committedEntry(entries);
  if (committed !== null && typeof committed.found === 'string') return committed.found;
  const late = entries.find((entry) => entry.kind === 'LATE_RESULT' && entry.outcome === 'landed');
  return late?.kind === 'LATE_RESULT' ? idOf(late.result) : null;
}

/**
 * What a committed effect's send is counted with on its caps: the approval and the cents (the effect's amount, which its
 * dispatch reserved), read from the chain, which every version wrote alike. Committed by its holder's settle: the
 * dispatch the COMMITTED closed (the last DISPATCHED before it). Committed by a landing reported late (LATE_RESULT):
 * on an AMBIGUOUS effect, the dispatch that went ambiguous, whose reservation stood (late-5 charges nothing again); on
 * a refused one, the send that landed, whose approval late-5 charged again: the last dispatch at or before the
 * landing's epoch (a recoverer's resend keeps its dispatch's approval). Null when the chain names neither.
 */
function countedOn(entries: readonly Entry[]): { approvalId: string; cents: number } | null {
  const isDispatch = (entry: Entry): entry is EntryOf<'DISPATCHED'> => entry.kind === 'DISPATCHED';
  const committed = committedEntry(entries);
  const landing = committed === null ? entries.find((entry): entry is EntryOf<'LATE_RESULT'> => entry.kind === 'LATE_RESULT' && entry.outcome === 'landed') : undefined;
  if (committed === null && landing === undefined) return null;
  const before = entries.slice(0, entries.indexOf(committed ?? (landing as Entry)));
  const last = before.findLast(isDispatch);
  if (last === undefined) return null;
  const ambiguous = before.slice(before.indexOf(last)).some((entry) => entry.kind === 'AMBIGUOUS');
  const dispatched = landing === undefined || ambiguous ? last : (before.findLast((entry): entry is EntryOf<'DISPATCHED'> => isDispatch(entry) && entry.epoch <= landing.epoch) ?? last);
  const effect = dispatchedEffect(entries, dispatched);
  const cents = effect === null ? null : num(effect.amount);
  if (cents === null) return null;
  return { approvalId: dispatched.approval, cents };
}

/**
 * Whether the effect was ever sent: a DISPATCHED on its chain. One the gate refused before any send (a stale premise,
 * a cap) made nothing at Stripe, so nothing there is its own, whatever metadata a refund made by hand carries.
 */
const everDispatched = (entries: readonly Entry[]) => entries.some((entry) => entry.kind === 'DISPATCHED');

/**
 * Whether the effect's one dispatch ended in a refusal that proves nothing of it reached Stripe: its first send, refused
 * before anything left or by a definite no its retries replay (the REFUSED:target_error closing it says so,
 * refusalLeftNothing; the gate looked nothing up then, src/gate/settle.ts). It made nothing at Stripe, as an effect never
 * dispatched did, so an object carrying its id (a refund made by hand, labelled with it) is someone else's. A refusal
 * that does not say so (a resend's, while an earlier request may still land; one recorded by an earlier version), or a
 * chain with another dispatch, leaves a landing possible.
 */
function refusedLeavingNothing(entries: readonly Entry[]): boolean {
  const [only, ...others] = entries.filter((entry) => entry.kind === 'DISPATCHED');
  if (only === undefined || others.length > 0) return false;
  const closing = entries.slice(entries.indexOf(only) + 1).find(closesDispatch);
  return closing?.kind === 'REFUSED' && closing.code === 'REFUSED:target_error' && refusalLeftNothing(closing.reason);
}

/** Whether anything at Stripe can be the effect's send landing: it was dispatched, and not refused leaving nothing. */
const mayHaveLanded = (entries: readonly Entry[]) => everDispatched(entries) && !refusedLeavingNothing(entries);

/**
 * The objects the effects committed on a subject made, each with the effect that committed it (`claims`, read by
 * claimsOn): a refund or balance transaction is the committer's alone, whatever its metadata says later.
 */
type Claims = ReadonlyMap<string, string>;

/**
 * What tells an effect's own refund from the others on its payment: the one it committed, else what its send would
 * make, only if it was ever sent (`dispatched`) and its send may have landed (not `leftNothing`: refusedLeavingNothing),
 * and never one another effect on the payment committed (`claims`).
 */
type OwnRefund = { committed: string | null; amount: number | null; dispatched: boolean; leftNothing: boolean; claims: Claims };

function ownRefundOf(entries: readonly Entry[], claims: Claims): OwnRefund {
  const amount = firstProposal(entries)?.effect.amount;
  return { committed: committedRefundOf(entries), amount: typeof amount === 'number' ? amount : null, dispatched: everDispatched(entries), leftNothing: refusedLeavingNothing(entries), claims };
}

/**
 * Why a refund on an effect's payment is not the effect's own; null when it is. Metadata can be edited at Stripe (or
 * pasted into a refund made by hand), so it is a lead, not proof. Once the effect committed a refund, that one is its
 * own, whatever its metadata now says (cleared, or naming another effect or none) and no other is. Before, the one
 * whose metadata names the effect and whose amount is what the send would have made, if the effect was ever sent and
 * no other effect committed it: another effect's refund relabelled with this one's id is not this one's late landing.
 * While its dispatch is open, none is recorded as its own until it commits (holdInFlight).
 */
function whyNotOwn(refund: RefundFact, effectId: string, own: OwnRefund): string | null {
  if (own.committed !== null) return refund.id === own.committed ? null : `the effect committed refund ${own.committed}`;
  if (refund.effectId !== effectId) return `its metadata names ${refund.effectId ?? 'no effect'}`;
  const committer = own.claims.get(refund.id);
  if (committer !== undefined) return `effect ${committer} committed it`;
  if (!own.dispatched) return 'the effect was never sent (settled before any dispatch)';
  if (own.leftNothing) return "the target refused the effect's only send, which left nothing of it at Stripe";
  return refund.amount === own.amount ? null : `it is of ${refund.amount} cents, and the effect's send would have made one of ${own.amount ?? 'no'} cents`;
}

/** The subject a refund is recorded under: its payment's (null for a refund on no payment). */
const paymentOf = (refund: RefundFact) => (refund.paymentIntent === null ? null : `payment:${refund.paymentIntent}`);

/**
 * What a fact event is about, as the applier reads it: a refund, a refunded charge's payment, a customer, a dispute
 * (`paymentIntent` null when its object names only its charge: Stripe's dispute.payment_intent is nullable, and the
 * charge is read for it), or nothing it can route (`unroutable`, with why: logged, never dropped in silence).
 */
type Named =
  | { kind: 'refund'; refund: RefundFact }
  | { kind: 'refunded_charge'; paymentIntent: string }
  | { kind: 'customer'; customer: string }
  | { kind: 'customer_deleted'; deletion: Deletion }
  | { kind: 'dispute'; dispute: DisputeFact; paymentIntent: string | null }
  | { kind: 'unroutable'; why: string };

/**
 * A credit effect's landed balance credit, as a deletion of its customer weighs it: `made`, its balance transaction;
 * `left` and `currency` (creditInBalance); `created` (Stripe's, seconds, null when its chain does not say it) and `at`
 * (when its chain recorded the landing, ms) order the credits; `deleted`: the part of the balance its chain's deletion
 * fact was given (cents of credit, positive), or null while its chain holds none.
 */
type LandedCredit = { effectId: string; partition: string; made: string; left: number | null; currency: string | null; created: number | null; at: number; deleted: number | null };

/** When the balance credit `made` was made: Stripe's `created`, from the landing's result or a fact on it, and the landing's `at`. */
function madeWhen(entries: readonly Entry[], made: string): { created: number | null; at: number } {
  const landing = entries.find((entry) => entry.kind === 'COMMITTED' || (entry.kind === 'LATE_RESULT' && entry.outcome === 'landed'));
  const result = landing?.kind === 'COMMITTED' || landing?.kind === 'LATE_RESULT' ? landing.result : null;
  const fromResult = typeof result === 'object' && result !== null && !Array.isArray(result) ? num(result.created) : null;
  const observed = entries.find((entry): entry is EntryOf<'OBSERVED'> => entry.kind === 'OBSERVED' && entry.objectId === made && entry.status !== CUSTOMER_DELETED && entry.status !== BALANCE_UNREAD && entry.created !== null);
  return { created: fromResult ?? observed?.created ?? null, at: landing?.at ?? 0 };
}

/**
 * A deleted customer's landed credits in the order its balance (negative is credit) is given out among them, each with
 * what of it may take a part (`unused`, cents of credit, >= 0) and the part its chain's deletion fact says already
 * (`recorded`), for journal.shareDeletion. Stripe keeps one balance per currency and an invoice takes it as one sum,
 * never naming the credits it used, so which credit is left cannot be told: the oldest credits are assumed used first,
 * and the newest are what is left. The unused balance goes to the newest credit first, up to what is left of it
 * (`left`), then to the next, so the parts sum to at most what the balance held as credit, and no credit is claimed lost
 * twice. Only credits in the balance's currency share it (either unknown counts as the same, as final-money.ts reads
 * it): one in another never reached the customer's invoices, takes nothing (0) and final-money.ts reads it unused
 * whatever its part. A credit whose amount is not known takes none. A part is given once, for good (share-deletion-1.lua):
 * a credit given one keeps it, and a credit that commits after the deletion was applied shares what the parts given
 * before left, never more, whichever process gets there first.
 */
function deletionClaims(credits: readonly LandedCredit[], currency: string | null): { made: string; unused: number; recorded: number | null }[] {
  const newestFirst = [...credits].sort((a, b) => (b.created ?? 0) - (a.created ?? 0) || b.at - a.at || b.effectId.localeCompare(a.effectId));
  return newestFirst.map((credit) => {
    const inCurrency = currency === null || credit.currency === null || credit.currency === currency;
    return { made: credit.made, unused: !inCurrency || credit.left === null ? 0 : Math.max(0, credit.left), recorded: credit.deleted };
  });
}

/**
 * A `customer.deleted` event as the facts need it: the customer, and its `balance` and `currency` as the event's customer
 * object carries them (null when it does not say them), as they were when Stripe deleted it; `created`: the event's.
 */
type Deletion = { customer: string; balance: number | null; currency: string | null; created: number | null };

/** A deletion as it is kept for its customer (journal.noteCustomerDeletion): the event's own word, with its id and type. */
type KeptDeletion = { eventId: string; eventType: string; customer: string; balance: number; currency: string | null; created: number | null };

/** A kept deletion read back; null for what no version wrote (it is logged by the caller). */
function keptDeletionOf(text: string): KeptDeletion | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const kept = parsed as Record<string, unknown>;
  const eventId = str(kept.eventId);
  const eventType = str(kept.eventType);
  const customer = str(kept.customer);
  const balance = num(kept.balance);
  if (eventId === null || eventType === null || customer === null || balance === null) return null;
  return { eventId, eventType, customer, balance, currency: str(kept.currency), created: num(kept.created) };
}

/** The part of the balance a chain's first deletion fact on `made` was given (cents of credit, positive), or null for none. */
function deletedShare(entries: readonly Entry[], made: string): number | null {
  const fact = entries.find((entry): entry is EntryOf<'OBSERVED'> => entry.kind === 'OBSERVED' && entry.objectId === made && entry.status === CUSTOMER_DELETED);
  return fact === undefined ? null : Math.max(0, -(fact.amount ?? 0));
}

function namedBy(event: StripeEvent): Named | null {
  if (!FACT_EVENTS.includes(event.type)) return null;
  const object = event.data.object;
  const what = `its ${str(object.object) ?? 'untyped'} object`;
  if ((REFUND_EVENTS as readonly string[]).includes(event.type)) {
    const refund = refundFromObject(object);
    if (refund) return { kind: 'refund', refund };
    if (object.object !== 'charge') return { kind: 'unroutable', why: `${what} is not a refund with an id, nor a charge` };
    const paymentIntent = idOf(object.payment_intent);
    return paymentIntent === null ? { kind: 'unroutable', why: `charge ${str(object.id) ?? '(no id)'} names no PaymentIntent (the gate refunds only PaymentIntents)` } : { kind: 'refunded_charge', paymentIntent };
  }
  if (event.type === 'customer.deleted') {
    const customer = object.object === 'customer' ? str(object.id) : null;
    if (customer === null) return { kind: 'unroutable', why: `${what} is not a customer with an id` };
    return { kind: 'customer_deleted', deletion: { customer, balance: num(object.balance), currency: str(object.currency)?.toLowerCase() ?? null, created: num(event.created) } };
  }
  if ((CREDIT_EVENTS as readonly string[]).includes(event.type)) {
    const customer = customerOfEvent(event);
    return customer === null ? { kind: 'unroutable', why: `${what} names no customer` } : { kind: 'customer', customer };
  }
  const dispute = disputeFromObject(object);
  if (dispute === null) return { kind: 'unroutable', why: `${what} is not a dispute with an id` };
  if (dispute.paymentIntent === null && dispute.charge === null) return { kind: 'unroutable', why: `dispute ${dispute.id} names neither a PaymentIntent nor a charge` };
  return { kind: 'dispute', dispute, paymentIntent: dispute.paymentIntent };
}

export function createFactsApplier(deps: { journal: Journal; alerts: Alerts; reader: StripeReader | null; logger: Logger; rereadBeforeAppend?: boolean }) {
  const { journal, alerts, reader, logger } = deps;
  const reread = deps.rereadBeforeAppend ?? true;

  /**
   * Appends `drafts` to one effect; raises what its receipt now calls for. `again`: the facts may have been seen by
   * an earlier run of the same work (a retried or stalled job, a re-read), so alerts are raised even when every fact
   * was recorded already (see below).
   */
  /**
   * `retags`: each object's `retag` (compensationTurn, chargeReadTurn). `appealed`: disputes whose appeal is on the chain
   * already (appealedDisputes), so a won or lost now is its end. `standing`: drafts that say what the latest fact on
   * their object says (standingReads), counted as seen already and not appended, whatever key they would have.
   * `recorded`: given, each draft appended is put in it with its entry's hash (applyPayment weighs them, overtaken).
   */
  async function appendTo(effectId: string, drafts: Draft<'OBSERVED'>[], again: boolean, facts: { retags?: ReadonlyMap<string, number>; appealed?: ReadonlySet<string>; standing?: ReadonlySet<Draft<'OBSERVED'>>; recorded?: Map<Draft<'OBSERVED'>, string> } = {}): Promise<Applied> {
    const partition = await journal.partitionOf(effectId);
    const applied: Applied = { effectId, appended: 0, duplicates: 0, alerts: [] };
    if (partition === null) return applied;
    let noted = false;
    let lostSaid = false;
    for (const draft of drafts) {
      const afterAppeal = draft.objectType === 'dispute' && (facts.appealed?.has(draft.objectId) ?? false) && !APPEAL_STATUSES.has(draft.status ?? '');
      const observed = facts.standing?.has(draft) === true ? null : await journal.observe(partition, effectId, draft, fingerprint(draft, facts.retags?.get(draft.objectId), afterAppeal));
      if (observed?.status === 'OK') {
        applied.appended += 1;
        facts.recorded?.set(draft, observed.entry.hash);
      } else applied.duplicates += 1;
      // Bound to its subject, yet Redis holds no state for it: its journal was lost (a partial loss the deployment
      // marker cannot see: a key deleted by hand, a slot failed over to a replica without it). The fact is not a
      // duplicate, and nothing can record it: said once for this run, naming what was not recorded.
      if (observed?.status === 'UNKNOWN_EFFECT' && !lostSaid) {
        lostSaid = true;
        logger.warn({ effectId, subject: partition, object: draft.objectId, objectType: draft.objectType, status: draft.status }, `a fact of ${draft.objectId} (${draft.objectType}${draft.status === null ? '' : ` ${draft.status}`}) names effect ${effectId}, bound to ${partition}, but Redis holds no state for that effect: its journal was lost, so the fact is not recorded and no alert can follow from it. Restore the effect's journal from a backup of Redis (receipts exported before still verify), and check the money on ${partition} at Stripe by hand.`);
      }
      // An object with this effect's id while the journal says the send never landed: it did, after all. Looked at
      // for a fact seen already too: a worker that died between the fact and the landing left only the fact, and
      // its event's next run (or a re-read) must still record the landing (late-5 records it once).
      if (landed(draft) && (await noteLateLanding(partition, effectId, draft))) noted = true;
      // After the landing, so a failed refund found late is committed (and counted) before its failure gives it back.
      // Looked at for a fact seen already too, as the landing is: a run that died between the two is run again.
      if (failedForGood(draft)) await releaseFailedRefund(partition, effectId, draft);
    }
    // A landing found late on a payment: until now the effect was not among the payment's committed effects, so a
    // dispute that came before this fact was recorded on nothing, and would wait for the reconciler's next pass. The
    // payment's disputes (and the effect's refunds) are read now instead. Once per landing: late-5 records it once.
    if (noted && reader !== null && partition.startsWith('payment:')) await applyPayment('reread', null, partition.slice('payment:'.length), [], effectId, true);
    // A balance credit found late on a customer whose deletion was applied before: the deletion reaches it now.
    if (noted && partition.startsWith('customer:')) await foldDeletion(partition, null);
    // Raised when facts seen already come again from work that may have run before: a run that recorded them and
    // then failed before its alerts were written (Redis refused the write, the process died) is retried, and the
    // retry finds only facts seen already; the reconciler's re-reads catch what a job gave up on. A first delivery
    // of an event whose facts another event recorded (most of Stripe's events repeat what an earlier one said) reads
    // nothing more. The alerts the receipt calls for stand as they are (a raise refreshes an open one).
    if (applied.appended > 0 || noted || (again && applied.duplicates > 0)) applied.alerts = await raiseAlerts(partition, effectId);
    return applied;
  }

  /**
   * A fact that proves the effect's send reached Stripe: a refund or balance transaction carrying the effect's id
   * exists only because the send created it, whatever its status now. A refund that has since failed or been
   * canceled still landed (a failed one moved the money and Stripe sent it back); what became of the money is the
   * OBSERVED facts' to say (final-money.ts). Judged by status, the landing would be recorded or not depending on
   * whether the facts first read the refund before or after it failed (DESIGN §8: never by arrival order).
   */
  const landed = (draft: Draft<'OBSERVED'>) => draft.objectType === 'refund' || (draft.objectType === 'customer_balance_transaction' && draft.incident === undefined && draft.status !== CUSTOMER_DELETED && draft.status !== BALANCE_UNREAD);

  /** A refund Stripe failed or canceled: final (it never succeeds again), and it moved no money (Stripe sent it back). */
  const failedForGood = (draft: Draft<'OBSERVED'>) => draft.objectType === 'refund' && (draft.status === 'failed' || draft.status === 'canceled');

  /**
   * Gives the cents of the effect's committed refund, failed for good, back to the approval its send is counted on and
   * to its payment's total (release-failed-3.lua), so the payment's shared cap counts only money that moved and the new
   * request the `failed_after_landed` alert advises finds its room. The script gives them back once per effect
   * (redelivered events, re-reads, retried or concurrent jobs), and only for a committed effect: one in flight is
   * re-read when it commits (holdInFlight), and one refused gave them back already.
   */
  async function releaseFailedRefund(partition: string, effectId: string, draft: Draft<'OBSERVED'>): Promise<void> {
    const { state } = await journal.readState(partition, effectId);
    // Read first only to spare the rest on an effect that plainly needs nothing (the script decides).
    if (!state.committed || state.failedReleased) return;
    const entries = await journal.entries(partition, effectId);
    // Only the refund the effect's send made is counted on its caps: another refund's failure gives back nothing.
    if (committedRefundOf(entries) !== draft.objectId) return;
    const counted = countedOn(entries);
    if (counted === null) {
      logger.warn({ effectId, refund: draft.objectId }, `refund ${draft.objectId} of effect ${effectId} failed, but its chain holds no dispatch with the amount it was counted with: nothing is given back to its caps`);
      return;
    }
    const released = await journal.releaseFailed(partition, effectId, counted.approvalId, counted.cents);
    if (released === 'released') logger.info({ effectId, refund: draft.objectId, approval: counted.approvalId, cents: counted.cents, subject: partition }, `refund ${draft.objectId} failed: its ${counted.cents} cents are given back to approval ${counted.approvalId} and to ${partition}'s total (the approval's use stays spent)`);
  }

  /** Records the landing unless the effect already holds one; late-5.lua decides, so facts read at once record it once. */
  async function noteLateLanding(partition: string, effectId: string, draft: Draft<'OBSERVED'>): Promise<boolean> {
    const { state } = await journal.readState(partition, effectId);
    // Read first only to spare the rest on an effect that plainly needs nothing.
    if (state.committed || state.open || state.count === 0) return false;
    const entries = await journal.entries(partition, effectId);
    const proposed = firstProposal(entries);
    if (!proposed) return false;
    // An effect refused before any send (epoch 0, no DISPATCHED) cannot have landed: an object carrying its id was
    // made by someone else (a refund by hand, labelled for traceability), and recording it would report money sent.
    if (state.epoch === 0 && !everDispatched(entries)) {
      logger.warn({ effectId, object: draft.objectId }, `${draft.objectId} names effect ${effectId}, which was never sent; no landing recorded`);
      return false;
    }
    // Nor can one whose only send the target refused in a way that proves nothing of it landed (refusedLeavingNothing):
    // the gate settled it without a lookup for that very reason, and the facts agree with it.
    if (refusedLeavingNothing(entries)) {
      logger.warn({ effectId, object: draft.objectId }, `${draft.objectId} names effect ${effectId}, whose only send the target refused leaving nothing of it at Stripe; no landing recorded`);
      return false;
    }
    // What the send would have made: a refund of the effect's amount, or a balance credit of it (negative at Stripe).
    // Anything else carrying the id (a debit, another amount) is not this effect's send landing.
    const amount = typeof proposed.effect.amount === 'number' ? proposed.effect.amount : null;
    const made = amount === null ? null : draft.objectType === 'refund' ? amount : -amount;
    if (draft.amount !== made) {
      logger.warn({ effectId, object: draft.objectId, amount: draft.amount, expected: made }, `${draft.objectId} names effect ${effectId} but is not what its send would have made; no landing recorded`);
      return false;
    }
    // Another effect on the subject committed the object (its metadata was relabelled since): that effect's send made
    // it, and recording it here would count the money twice.
    const committer = (await claimsOn(partition)).get(draft.objectId);
    if (committer !== undefined) {
      logger.warn({ effectId, object: draft.objectId, committer }, `${draft.objectId} names effect ${effectId} but effect ${committer} committed it; no landing recorded`);
      return false;
    }
    // A refund's currency as Stripe had it (refundCurrencies), as recovery's landing carries it in the refund's summary:
    // without it the receipt's alerts would write a yen refund's amount in dollars.
    const currency = refundCurrencies.get(draft);
    const result = { id: draft.objectId, object: draft.objectType, status: draft.status, amount: draft.amount, charge: draft.charge, ...(currency === undefined ? {} : { currency }) };
    const recorded = await journal.lateLanding(partition, effectId, { kind: 'LATE_RESULT', owner: 'facts', epoch: state.epoch, outcome: 'landed', result, error: null }, state.approvalId);
    if (recorded.status !== 'OK') return false;
    logger.warn({ effectId, object: draft.objectId, status: draft.status }, `a ${draft.objectType === 'refund' ? 'refund' : 'balance credit'} landed for an effect the journal had settled without it`);
    return true;
  }

  /**
   * Raises what the receipt calls for and settles the rest. Facts appended by another worker between this read and
   * these writes (a note voided meanwhile) would be undone by a raise from the older read, after that worker's settle
   * found nothing to resolve: so the chain is read again after the writes, and the alerts redone from it while it moved.
   */
  async function raiseAlerts(partition: string, effectId: string): Promise<string[]> {
    let entries = await journal.entries(partition, effectId);
    for (let pass = 1; ; pass += 1) {
      const raised = await alertsFrom(partition, effectId, entries);
      const now = await journal.entries(partition, effectId);
      if (now.at(-1)?.hash === entries.at(-1)?.hash || pass === ALERT_PASSES) return raised;
      entries = now;
    }
  }

  async function alertsFrom(partition: string, effectId: string, entries: readonly Entry[]): Promise<string[]> {
    const verification = verify(unsignedReceipt(effectId, entries));
    const raised: string[] = [];
    const drafts = alertsFor(verification);
    for (const draft of drafts) {
      const { alert, created } = await alerts.raise({ ...draft, effectId, subject: partition });
      raised.push(alert.id);
      if (created) logger.warn({ alert: alert.id, effectId, centsAtStake: alert.centsAtStake, action: alert.action }, alert.sentence);
    }
    for (const alert of await alerts.settle(effectId, drafts.map((draft) => draft.kind))) {
      logger.info({ alert: alert.id, effectId }, `alert resolved: later facts no longer call for it (${alert.kind})`);
    }
    return raised;
  }

  /**
   * Refund facts: to the effect that committed the refund, if one did, whatever its metadata says now (cleared, or
   * changed to name another effect); else to the effect its metadata names when the refund is that effect's own
   * (whyNotOwn), a late landing. A refund whose metadata names an effect whose dispatch is still open (its answer slow
   * or lost), fine, failed or canceled, is recorded on nothing yet: until the commit names the refund the send made, one
   * made by hand with the effect's id and amount cannot be told from it (holdInFlight). So, as for a dispute
   * (applyPayment), the payment is marked (note-fact-1), and the settle that commits the refund sees the mark and
   * re-reads the effect's facts at once: the fact, and the `failed_after_landed` alert a failure calls for once the
   * refund commits, come seconds after the settle rather than at the reconciler's next pass. The cost is one read of
   * the payment at Stripe by that settle (and by later settles on the marked payment); a payment no refund event came
   * for while in flight is not marked by this.
   */
  async function applyRefund(source: Observed['source'], eventId: string | null, eventType: string, refund: RefundFact, again: boolean): Promise<Applied[]> {
    // Re-read, a refund Stripe does not know is no fact (a signed event can still be about another account).
    const current = reread && reader ? await reader.refund(refund.id) : refund;
    if (current === null) return [];
    // The committer is asked first: its metadata may have been cleared or changed at Stripe after the send, and a
    // committed refund relabelled with another effect's id is still not that effect's. Nothing is marked (a committed
    // effect needs no settle to look again).
    const claims = await claimsOn(paymentOf(current));
    const committer = claims.get(current.id);
    // Else the metadata leads to the effect whose refund this is, or to none (the refund is someone else's).
    const owner = committer ?? (current.effectId !== null && (await refundOfEffect(current.effectId, current, claims)) ? current.effectId : null);
    const applied = owner === null ? [] : [await appendTo(owner, [refundObserved(source, eventId, eventType, current)], again)];
    // Ours or not, the refund may have changed what is refunded on a charge its payment's chargeback was recorded with.
    return [...applied, ...(await followCharge(current.paymentIntent, again))];
  }

  /**
   * A refund's event on a payment whose chargeback was recorded with its charge read (standingChargeReads): the refund
   * may have changed what is refunded on the charge (a new refund, one failed or canceled; the gate's or one made in
   * the Dashboard), and so how much of every refund on it the chargeback overlaps (deriveExposure), on every receipt on
   * the payment, not only that of the effect whose refund it is. Left to the reconciler, a refund failing at the bank
   * after its horizon would leave the other receipts reporting money returned twice for good. So the charge is read,
   * and when it differs from a read standing on any effect's chain, the payment's disputes and charge are re-read for
   * every effect committed on it (applyPayment), which records the read that changed. Redis alone on a payment holding
   * no such chargeback, one read of its charge on one that does. The re-read records facts and is never an event, so
   * it never leads here again; a duplicate event finds the read standing and reads nothing more. A job run `again`
   * re-reads the payment whatever it finds: its first run may have recorded the read and stopped before the alerts.
   * Events are re-read only when the setting says so (rereadBeforeAppend); off, the reconciler's re-reads do it.
   */
  async function followCharge(paymentIntent: string | null, again: boolean): Promise<Applied[]> {
    if (paymentIntent === null || !reread || reader?.charge === undefined) return [];
    const payment = `payment:${paymentIntent}`;
    const standing = new Map<string, Set<string>>();
    for (const effectId of await journal.effectsOn(payment)) {
      for (const { charge, read } of standingChargeReads(await journal.entries(payment, effectId))) standing.set(charge, (standing.get(charge) ?? new Set<string>()).add(read));
    }
    if (standing.size === 0) return [];
    let changed = again;
    for (const [id, reads] of standing) {
      if (changed) break;
      const charge = await reader.charge(id);
      const now = charge === null ? null : chargeReadOf({ chargeAmount: charge.amount, chargeRefunded: charge.refunded });
      changed = now !== null && [...reads].some((read) => read !== now);
    }
    return changed ? applyPayment('reread', null, paymentIntent, [], null, again) : [];
  }

  /**
   * What the effects committed on a subject made (their COMMITTED found, or a landing they recorded), each with its
   * committer: so a committed object that fails after its metadata was edited still reaches its receipt, and is never
   * taken as another effect's. Empty for no subject (a refund on no payment).
   */
  async function claimsOn(partition: string | null): Promise<Claims> {
    const claims = new Map<string, string>();
    if (partition === null) return claims;
    for (const effectId of await journal.effectsOn(partition)) {
      const made = committedRefundOf(await journal.entries(partition, effectId));
      if (made !== null && !claims.has(made)) claims.set(made, effectId);
    }
    return claims;
  }

  /** The effect that committed the refund (or recorded it as its late landing), among those committed on its payment; null for none. */
  async function committerOf(refund: RefundFact): Promise<string | null> {
    return (await claimsOn(paymentOf(refund))).get(refund.id) ?? null;
  }

  /** Whether anything committed on the refund's payment (Redis alone): only then can a refund naming no effect be one of ours. */
  async function committedOnPayment(refund: RefundFact): Promise<boolean> {
    return refund.paymentIntent !== null && (await journal.effectsOn(`payment:${refund.paymentIntent}`)).length > 0;
  }

  /**
   * Whether a refund whose metadata names `effectId` is that effect's own (whyNotOwn, `claims`: those on the refund's
   * payment): it must be on the effect's payment too. Otherwise nothing is recorded on it and the log says why. Without
   * this, an id pasted into another refund's metadata recorded a landing (and charged the approval) for an effect that
   * never moved money, or another refund's failure on an effect whose own refund stood. While the effect's dispatch is
   * open, it is not yet: the settle's re-read records it if the commit names it (holdInFlight).
   */
  async function refundOfEffect(effectId: string, refund: RefundFact, claims: Claims): Promise<boolean> {
    const partition = await journal.partitionOf(effectId);
    if (partition === null) return false;
    const entries = partition === paymentOf(refund) ? await journal.entries(partition, effectId) : [];
    const own = ownRefundOf(entries, claims);
    const problem =
      partition !== paymentOf(refund) ? `it is on payment ${refund.paymentIntent ?? 'none'}, and the effect's is ${partition}`
      : whyNotOwn(refund, effectId, own);
    if (problem !== null) {
      logger.warn({ effectId, refund: refund.id }, `refund ${refund.id} names effect ${effectId} in its metadata, but ${problem}: not recorded on it`);
      return false;
    }
    if (own.committed !== null || openDispatch(entries) === null) return true;
    const after = await holdInFlight(partition, effectId, [refund.id]);
    return !after.held && whyNotOwn(refund, effectId, ownRefundOf(after.entries, claims)) === null;
  }

  /**
   * Before an effect commits, only metadata and amount tell what its send made (whyNotOwn, applyCredits' `own`), and
   * while its dispatch is open (a slow or lost answer) those prove nothing: a Dashboard user can copy the effect's id
   * (from the API's answer to the proposal, or from the send's own object) onto a refund or balance credit of the same
   * amount they make by hand, before or after the send lands. Such an object is not told from the send's own until the
   * commit names one, even when it is the only one yet (the send's own may not be at Stripe), and a fact recorded on
   * the wrong one would stay on the receipt as the effect's money. So none of these `objects` is recorded, and, as for
   * a dispute on a payment in flight (applyPayment), the subject is marked (note-fact-1): the settle that closes the
   * dispatch sees the mark and re-reads the effect's facts (settle-5 `reread`, src/gate/settle.ts), judged then by what
   * the commit names, with the alerts they call for (a refund failed after it landed). The chain is read again after
   * the mark: a settle before it shows there (`held` false, and the caller judges by that chain), one after it sees the
   * mark.
   */
  async function holdInFlight(partition: string, effectId: string, objects: readonly string[]): Promise<{ entries: readonly Entry[]; held: boolean }> {
    await journal.notePaymentFact(partition);
    const entries = await journal.entries(partition, effectId);
    const held = openDispatch(entries) !== null;
    if (held) logger.info({ effectId, objects }, `${objects.join(', ')} name${objects.length === 1 ? 's' : ''} effect ${effectId}, whose dispatch is open, with what its send makes: whether its send made ${objects.length === 1 ? 'it' : 'one of them'} is known once it commits, so nothing is recorded on it now (its settle re-reads its facts)`);
    return { entries, held };
  }

  /**
   * The charges of the chargebacks among `disputes`, read at Stripe once each (a charge Stripe does not know, or a
   * reader that reads no charges, leaves its disputes recorded without it). A chargeback returns money twice only where
   * it overlaps the refunds on its charge: a partial one of a partly refunded charge may return nothing twice. `known`:
   * charges this job read already (a dispute naming only its charge was routed by it), not read again.
   */
  async function chargesOf(disputes: readonly DisputeFact[], known: ReadonlyMap<string, ChargeFact>): Promise<Map<string, ChargeFact>> {
    const read = new Map(known);
    if (reader?.charge === undefined) return read;
    const ids = new Set(disputes.flatMap((dispute) => (dispute.charge !== null && isChargeback(dispute.status) ? [dispute.charge] : [])));
    for (const id of ids) {
      if (read.has(id)) continue;
      const charge = await reader.charge(id);
      if (charge !== null) read.set(id, charge);
    }
    return read;
  }

  /**
   * The payment of a dispute whose object names only its charge (Stripe's dispute.payment_intent is nullable): the
   * charge's, read at Stripe, with the charge as read (its dispute facts are weighed against it, chargesOf). Null, with
   * a warning naming the event and why, when it cannot be found: the dispute is then recorded on nothing, and only the
   * reconciler's re-reads of the payment's effects would find it.
   */
  async function paymentOfDispute(eventId: string, dispute: DisputeFact): Promise<{ paymentIntent: string; charge: ChargeFact } | null> {
    const unrouted = (why: string) => {
      logger.warn({ event: eventId, dispute: dispute.id, charge: dispute.charge, why }, `event ${eventId} about dispute ${dispute.id} was not applied: ${why}`);
      return null;
    };
    if (dispute.charge === null) return unrouted('it names neither a PaymentIntent nor a charge');
    if (reader?.charge === undefined) return unrouted(`it names no PaymentIntent, and no Stripe reader is set to read its charge ${dispute.charge}`);
    const charge = await reader.charge(dispute.charge);
    if (charge === null) return unrouted(`it names no PaymentIntent, and Stripe does not know its charge ${dispute.charge}`);
    return charge.paymentIntent === null ? unrouted(`its charge ${dispute.charge} has no PaymentIntent (the gate refunds only PaymentIntents)`) : { paymentIntent: charge.paymentIntent, charge };
  }

  /**
   * The effects committed on the payment of a dispute whose object names only its charge, for a facts job that failed
   * for good (concerned): the charge is read at Stripe. Throws, saying which charge, when Stripe cannot answer (or no
   * reader reads charges): the effects cannot be told then, which is not the same as none (queues/facts.ts logs it so).
   */
  async function effectsOnChargeOf(dispute: DisputeFact, charge: string): Promise<string[]> {
    const cannotTell = (why: string, code: ErrorCode, cause?: unknown) =>
      new InterlockError(code, `dispute ${dispute.id} names no PaymentIntent, only its charge ${charge}, and ${why}: the effects on its payment cannot be told`, cause === undefined ? {} : { cause });
    if (reader?.charge === undefined) throw cannotTell('no Stripe reader is set to read charges', 'not_available');
    let read: ChargeFact | null;
    try {
      read = await reader.charge(charge);
    } catch (error) {
      throw cannotTell(`Stripe could not answer its read (${errorMessage(error)})`, errorCode(error), error);
    }
    // A charge Stripe does not know, or one made without a PaymentIntent, is on no payment the gate refunded.
    return read === null || read.paymentIntent === null ? [] : journal.effectsOn(`payment:${read.paymentIntent}`);
  }

  /**
   * Dispute facts: to every effect that committed on the payment (`only`: to that one). A chargeback fails the
   * refunds still inside Stripe's window in the same step, so each effect's refunds are read with the disputes:
   * a receipt never shows the chargeback without what it did to the refund (and raises no exposure it never had).
   *
   * A refund in flight on the payment (dispatched, not settled) is not among the committed. Recording the fact on it
   * now would not be enough: the subject keeps no list of its open effects, and the `exposure` alert is only called
   * for once the refund has committed, so something must look again after the settle anyway. So the event marks the
   * payment (note-fact-1.lua, in the step that lists the committed effects, so no settle falls between the two), and
   * the sender that commits the refund, or settles it AMBIGUOUS, sees the mark in its settle step and re-reads the
   * effect's facts right away (src/gate/settle.ts): the fact and its alert come seconds after the settle, not at the
   * reconciler's next pass. A refund on a payment no dispute came for costs nothing more: no mark, no re-read.
   */
  async function applyPayment(source: Observed['source'], event: { id: string; type: string } | null, paymentIntent: string, disputes: DisputeFact[], only: string | null, again: boolean, confirm = true, known: ReadonlyMap<string, ChargeFact> = new Map()): Promise<Applied[]> {
    const effects = only === null ? await journal.notePaymentFact(`payment:${paymentIntent}`) : [only];
    if (effects === null || effects.length === 0) return [];
    const payment = `payment:${paymentIntent}`;
    // Each chain as it was before Stripe is read. The appeals it held: an appeal recorded by then was at Stripe before
    // this read, so a won or lost the read finds is the appeal's end. Read after, a chain may hold an appeal newer than
    // the read (a slow job that read `lost` before the appeal began), whose `lost` is the first loss, recorded already.
    const before = new Map(await Promise.all(effects.map(async (effectId) => [effectId, await journal.entries(payment, effectId)] as const)));
    // The reconciler re-reads whatever the setting; events are re-read unless it is off.
    const fresh = reader !== null && (reread || source === 'reread');
    const [current, refunds] = fresh && reader ? await Promise.all([reader.disputesOf(paymentIntent), reader.refundsOf(paymentIntent)]) : [disputes, []];
    const charges = fresh ? await chargesOf(current, known) : new Map<string, ChargeFact>();
    const eventType = (object: string) => event?.type ?? `${object}.reread`;
    const claims = refunds.length === 0 ? new Map<string, string>() : await claimsOn(payment);
    // The refunds on the chargebacks' charges, recorded on every receipt on the payment so each works out its share of
    // what was returned twice from the same list (deriveExposure).
    const shared = refundsToShare(current, charges, refunds);
    const results = await Promise.all(
      effects.map(async (effectId) => {
        const reads = current.map((dispute) => disputeObserved(source, event?.id ?? null, eventType('dispute'), dispute, dispute.charge === null ? undefined : charges.get(dispute.charge)));
        const withCharge = reads.filter((draft) => draft.chargeAmount !== undefined);
        // The chain as it is now, read only when there are refunds or charge reads to weigh against it.
        let entries: readonly Entry[] = refunds.length === 0 && withCharge.length === 0 ? [] : await journal.entries(payment, effectId);
        // Each effect's own refund by its id, whatever the metadata says now (whyNotOwn). An effect in flight (a re-read
        // of it) records none until it commits (holdInFlight).
        const ownOf = (chain: readonly Entry[]) => refunds.filter((refund) => whyNotOwn(refund, effectId, ownRefundOf(chain, claims)) === null);
        let owned = refunds.length === 0 ? [] : ownOf(entries);
        if (owned.length > 0 && committedRefundOf(entries) === null && openDispatch(entries) !== null) {
          const after = await holdInFlight(payment, effectId, owned.map((refund) => refund.id));
          entries = after.entries;
          owned = after.held ? [] : ownOf(entries);
        }
        const own = owned.map((refund) => refundObserved(source, event?.id ?? null, eventType('refund'), refund));
        const listed = shared.map((refund) => chargeRefundObserved(source, event?.id ?? null, eventType('charge'), refund));
        const turns = new Map(withCharge.map((draft) => [draft.objectId, chargeReadTurn(entries, draft.objectId, draft)] as const));
        const earlier = before.get(effectId) ?? [];
        const recorded = new Map<Draft<'OBSERVED'>, string>();
        const applied = await appendTo(effectId, [...own, ...listed, ...reads], again, { retags: turns, appealed: appealedDisputes(earlier), standing: standingReads(entries, withCharge), recorded });
        // A charge read that another job recorded while this one read Stripe, unlike this one's: the two jobs may append
        // in the other order than they read in, and the one appended last (this one's) stands (final-money.ts). Which
        // read is newer cannot be told from here, so, as for an appeal, one more read records the charge as it is now
        // after both (chargeReadTurn lets it be recorded again). The other job's read can land at any time before this
        // one's append (after `entries` was read too), so the chain is read once more after it: only when this job
        // appended a charge read, and reads racing on one dispute are rare; so is the read of Stripe.
        const ours = new Set(withCharge.flatMap((draft) => recorded.get(draft) ?? []));
        const routed = new Set(withCharge.flatMap((draft) => (draft.charge !== null && known.has(draft.charge) ? [draft.objectId] : [])));
        const raced = confirm && fresh && ours.size > 0 && overtaken(await journal.entries(payment, effectId), ours, earlier.length, routed);
        // An appeal's status appended now may stand after the appeal's end, recorded meanwhile by a job that read it
        // later (and, its chain holding no appeal yet, as a plain won or lost): the chain would read "under appeal".
        // One more read, with the appeal on the chain, records the end after it. Appeals are rare; so is this read.
        if (confirm && fresh && applied.appended > 0 && (raced || current.some((dispute) => APPEAL_STATUSES.has(dispute.status)))) {
          const confirmed = await applyPayment('reread', null, paymentIntent, [], effectId, true, false);
          for (const more of confirmed) {
            applied.appended += more.appended;
            applied.duplicates += more.duplicates;
          }
        }
        return applied;
      }),
    );
    return results.filter((applied) => applied.appended + applied.duplicates > 0);
  }

  /**
   * Credit facts: to each credit effect on the customer, its own balance transaction (by the effect id in its
   * metadata; with its currency and the one the customer is billed in), the debits labelled with it that take it back,
   * the credits labelled with it that give back what those took (re-credits), and the others' compensations for its
   * incident: credit notes tagged with it, negative balance credits tagged with it that its send did not make, and the
   * debits tagged with it that take those back, per currency (what the credit target nets before a send,
   * incidentCompensation; those in another currency than the credit's with it). A compensation recorded on the effect before is recorded again with the
   * incident its metadata names now, so a note billing re-tags to another incident stops counting (final-money.ts).
   * Stripe announces a balance move only as `customer.updated`, which also fires for unrelated changes, so these facts
   * are recorded once per content, not once per event.
   *
   * A compensation for the incident of a credit still in flight (its dispatch open, its answer lost) calls for the
   * `compensated_twice` alert only once the credit commits. So, as for a dispute on a payment (applyPayment), the
   * customer is marked (note-fact-1) before anything is recorded, and the settle that commits the credit re-reads its
   * facts at once (src/gate/settle.ts). The mark is made when the incident's holder on the subject is not among its
   * committed effects (nothing of the credit at Stripe yet: it is recorded on nothing now), and when a compensation is
   * recorded on an open effect.
   *
   * `updated`: the `customer.updated` event applied, if that is what this is. Stripe announces every move of a balance
   * only so, and 404s a deleted customer's balance transactions for good: one applied once its customer is deleted (the
   * worker was behind or down, or the events came late) re-reads a move nothing can read any more, and the event carries
   * the customer, never the balance transaction that moved it. A debit labelled with the effect taking its credit back
   * (not_returned), an invoice using it (returned) and billing's credit all look the same from it. So each credit that
   * landed on the customer records the move as unread (BALANCE_UNREAD, with the balance the event carries), and its
   * final money reads `unknown` rather than `returned`, with an alert asking a person (final-money.ts, alert-rules.ts).
   * Taking the event's own payload instead, as the last word Stripe gives (as a deletion's balance is taken,
   * applyDeletion), would not do here: the payload names no balance transaction and no label, so it cannot say whose
   * move it was, only that one came. A move read before the deletion (applied live, or by the reconciler) is recorded
   * as it was read; the same event coming again after the deletion still records the unread fact, which turns only a
   * `returned` reading into `unknown`: a person is asked once more than needed, never told something the facts do not say.
   */
  async function applyCredits(source: Observed['source'], eventId: string | null, eventType: string, customer: string, only: string | null, again: boolean, updated?: StripeEvent): Promise<Applied[]> {
    const subject = `customer:${customer}`;
    let effects = only === null ? await journal.effectsOn(subject) : [only];
    // The subject lists committed effects only; a customer nothing was ever dispatched on is not read at all.
    if (!reader || (effects.length === 0 && !(await journal.subjectKnown(subject)))) return [];
    const credits = await reader.creditsOf(customer);
    // Any customer the gate credited lists that credit while Stripe has the customer: asked only when the list is empty.
    // An update whose previous_attributes (as Stripe sends them) name no `balance` moved none of the balance a credit
    // is in: its email, say, changed, or a balance in another currency than the customer's moved (named only under
    // `invoice_credit_balance`), which holds none of the gate's credits: apply gives them in the customer's currency.
    const moved = updated !== undefined && (updated.data.previous_attributes === undefined || 'balance' in updated.data.previous_attributes);
    const unread = moved && !credits.some((credit) => credit.objectType === 'customer_balance_transaction') && (await balanceGone(subject, customer));
    // A balance transaction a committed effect on the customer made is that effect's alone: relabelled at Stripe with
    // another effect's id, it is not that one's late landing. Read once, and only when an effect not committed may
    // claim a balance credit by its metadata.
    let claims: Promise<Claims> | undefined;
    const claimed = () => (claims ??= claimsOn(subject));
    if (only === null) {
      // Marked and listed in one step (note-fact-1): a credit committed before it is listed, one committed after sees the mark.
      if (await compensatesInFlight(subject, credits, effects)) effects = (await journal.notePaymentFact(subject)) ?? effects;
      // A balance credit names the effect that made it. One the journal settled without a landing (a send that reached
      // Stripe after the effect was refused) is not among the committed, and only its metadata leads to it, as a
      // refund's does: without it its late landing would never be recorded from customer.updated.
      const leads = credits.filter((credit) => credit.objectType === 'customer_balance_transaction' && credit.effectId !== null && !effects.includes(credit.effectId));
      const taken = leads.length === 0 ? new Map<string, string>() : await claimed();
      const named = new Set(leads.flatMap((credit) => (credit.effectId !== null && !taken.has(credit.id) ? [credit.effectId] : [])));
      for (const effectId of named) if ((await journal.partitionOf(effectId)) === subject) effects.push(effectId);
    }
    const results: Applied[] = [];
    for (const effectId of effects) {
      const partition = await journal.partitionOf(effectId);
      if (partition === null) continue;
      let entries: readonly Entry[] = await journal.entries(partition, effectId);
      const effect = firstProposal(entries)?.effect;
      if (effect?.kind !== 'credit') continue;
      const incident = typeof effect.incident === 'string' ? effect.incident : null;
      // In flight, a balance credit labelled with the effect and of its amount is not told from one made by hand until it
      // commits: none is recorded as its credit now, and the settle's re-read records the one the commit names (holdInFlight).
      let held: ReadonlySet<string> = new Set();
      if (committedRefundOf(entries) === null && openDispatch(entries) !== null) {
        const taken = await claimed();
        const leads = credits.filter((credit) => credit.objectType === 'customer_balance_transaction' && credit.effectId === effectId && !taken.has(credit.id) && credit.amount === -Number(effect.amount));
        if (leads.length > 0) {
          const after = await holdInFlight(partition, effectId, leads.map((credit) => credit.id));
          entries = after.entries;
          if (after.held) held = new Set(leads.map((credit) => credit.id));
        }
      }
      // Its own balance transaction is the credit its send made: the effect's amount, given (negative at Stripe). A debit
      // or another amount carrying the id (metadata set by hand), or anything carrying the id of an effect never sent or
      // whose only send was refused leaving nothing (mayHaveLanded), is not recorded as the effect's credit.
      // Once it committed (or a late landing was recorded), the balance transaction its send made is its own whatever
      // its metadata says now, and no other is (as for refunds, whyNotOwn): cleared or edited metadata neither turns its
      // own credit into billing's second compensation nor hides a second credit that copied its id. Before, one another
      // effect committed is not its own whatever its metadata names: that effect's credit relabelled is no late landing.
      const sent = mayHaveLanded(entries);
      const made = committedRefundOf(entries);
      // A credit labelled with the effect once its credit landed, that its send did not make: a re-credit unless another
      // effect committed it or it came before the credit (notReCredit).
      const labelledCredit = (credit: CreditFact) => made !== null && credit.objectType === 'customer_balance_transaction' && credit.effectId === effectId && credit.id !== made && credit.amount < 0;
      const taken = made === null || credits.some(labelledCredit) ? await claimed() : new Map<string, string>();
      const named = (credit: CreditFact) => (made !== null ? credit.id === made : credit.effectId === effectId && !taken.has(credit.id));
      const own = (credit: CreditFact) => sent && named(credit) && !held.has(credit.id) && credit.objectType === 'customer_balance_transaction' && (made !== null || credit.amount === -Number(effect.amount));
      const recorded = new Set(entries.flatMap((entry) => (entry.kind === 'OBSERVED' && (entry.objectType === 'credit_note' || entry.incident !== undefined) ? [entry.objectId] : [])));
      // A debit labelled with the effect once its credit landed is the credit taken back (the step the compensated_twice
      // alert offers, and the one a credit in the wrong currency calls for): recorded, so the final money no longer says
      // the customer holds it. One larger than what is left of the credit takes back no more than that: the receipt
      // counts at most the credit (final-money.ts), and the excess is only logged.
      const reversal = (credit: CreditFact) => made !== null && credit.objectType === 'customer_balance_transaction' && credit.effectId === effectId && credit.id !== made && credit.amount > 0;
      // A credit labelled with the effect once its credit landed, that its send did not make, gives back what a debit took
      // (a take-back undone: Stripe cannot delete the debit): recorded with the incident it is tagged with, and netted
      // against the debits (final-money.ts). What it gives beyond them is, tagged with the incident, a second credit for
      // it (a copy of the credit: a replayed request), so final-money.ts counts that part as another compensation.
      // Not one another effect committed, whatever its metadata names now (claimsOn, as for `own` and late landings): that
      // is the other effect's credit, relabelled, and counting it here would count one credit on two receipts. Nor one
      // made before the effect's own credit (by Stripe's `created`, in seconds): it cannot undo a take-back, which comes
      // after the credit.
      const ownCreated = credits.find((credit) => credit.id === made)?.created ?? null;
      const notReCredit = (credit: CreditFact): string | null => {
        const committer = taken.get(credit.id);
        if (committer !== undefined && committer !== effectId) return `committed by effect ${committer}`;
        if (ownCreated !== null && credit.created !== null && credit.created < ownCreated) return `made before its credit ${made ?? ''}`;
        return null;
      };
      const reCredit = (credit: CreditFact) => labelledCredit(credit) && notReCredit(credit) === null;
      // Another party's compensation for the incident: a credit note, a balance credit its send did not make, or a debit
      // taking one of those back (a debit labelled with this effect takes back this effect's own credit: a reversal).
      // Stripe keeps a balance per currency, so a debit moves only the balance it is in: a debit tagged with the
      // incident in eur takes nothing back of billing's usd credit for it. Those in the credit's currency are recorded
      // without one (as they always were). A balance credit tagged with the incident in another currency compensates it
      // all the same (billing's ¥700 for a usd customer's jpy invoice), as a credit note in another currency does, and
      // as the credit target counts it before a send (incidentCompensation): recorded with its currency, and with it
      // the tagged debits in that currency, so final-money.ts nets them per currency. A debit tagged with the incident
      // in a currency where billing holds no tagged credit for it takes back nothing anywhere: not recorded. The
      // credit's currency: its own balance transaction's, else what its chain says (its `currency` premise); unknown,
      // every one is recorded without a currency, as before.
      const creditCurrency = credits.find((credit) => credit.id === made)?.currency ?? currencyOfEffect(entries);
      const theirs = (credit: CreditFact) => credit.objectType === 'credit_note' || (!named(credit) && !reCredit(credit) && (credit.amount < 0 || (credit.amount > 0 && credit.effectId !== effectId)));
      const tagged = (credit: CreditFact) => incident !== null && credit.incident === incident;
      const creditedIn = new Set(credits.flatMap((credit) => (foreignMove(credit, creditCurrency) && credit.amount < 0 && theirs(credit) && tagged(credit) && credit.currency !== null ? [credit.currency] : [])));
      const counted = (credit: CreditFact) => !foreignMove(credit, creditCurrency) || recorded.has(credit.id) || (credit.currency !== null && creditedIn.has(credit.currency));
      const compensation = (credit: CreditFact) => theirs(credit) && counted(credit) && (tagged(credit) || recorded.has(credit.id));
      for (const credit of credits) {
        if (credit.effectId !== effectId || credit.objectType !== 'customer_balance_transaction' || held.has(credit.id) || own(credit) || reversal(credit) || reCredit(credit)) continue;
        const why = labelledCredit(credit) ? notReCredit(credit) : null;
        if (why !== null) logger.warn({ effectId, object: credit.id, amount: credit.amount, why }, `${credit.id} names effect ${effectId} but was ${why}; not recorded as a re-credit`);
        else logger.warn({ effectId, object: credit.id, amount: credit.amount }, `${credit.id} names effect ${effectId} but is not the credit its send made; not recorded on it`);
      }
      noteExcessReversal(effectId, Number(effect.amount), credits.find((credit) => credit.id === made) ?? null, credits.filter(reversal), credits.filter(reCredit));
      const role = (credit: CreditFact) => (own(credit) ? 'own' : reversal(credit) ? 'reversal' : reCredit(credit) ? 're-credit' : compensation(credit) ? 'compensation' : null);
      const drafts = credits.flatMap((credit) => {
        const as = role(credit);
        return as === null ? [] : [creditObserved(source, eventId, eventType, credit, as, creditCurrency)];
      });
      // A move Stripe announced before the credit was made (billing's own credit, its event redelivered after the
      // deletion) cannot have used the credit or taken it back. Compared in Stripe's seconds: a move in the credit's own
      // second, or a credit whose making its chain does not date, may be later, and is recorded.
      const madeAt = made === null ? null : madeWhen(entries, made).created;
      const movedAt = updated === undefined ? null : num(updated.created);
      const movedBefore = movedAt !== null && madeAt !== null && movedAt < madeAt;
      if (unread && updated !== undefined && made !== null && !movedBefore) {
        logger.warn({ effectId, event: eventId, customer }, `event ${eventId ?? '(none)'} says customer ${customer}'s balance changed, but Stripe deleted the customer before it was read and no longer lists its balance transactions: what became of effect ${effectId}'s credit ${made} cannot be told`);
        drafts.push({ kind: 'OBSERVED', source, eventId, eventType, objectType: 'customer_balance_transaction', objectId: made, status: BALANCE_UNREAD, failureReason: null, amount: num(updated.data.object.balance), charge: null, disputeStatus: null, disputeReason: null, created: num(updated.created) });
      }
      if (drafts.length === 0) continue;
      if (drafts.some((draft) => draft.incident !== undefined) && (await journal.readState(partition, effectId)).state.open) await journal.notePaymentFact(subject);
      const retags = new Map(credits.flatMap((credit) => {
        const as = role(credit);
        return as === 're-credit' || as === 'compensation' ? [[credit.id, compensationTurn(entries, credit.id, { role: as, incident: credit.incident })] as const] : [];
      }));
      results.push(await appendTo(effectId, drafts, again, { retags }));
    }
    return results;
  }

  /**
   * Logs what labelled debits take back beyond the credit (`cents`), oldest first: counted up to what is left of it
   * with what re-credits gave back (`reCredits`, netted in any order as the balance adds them up), the rest is not
   * (final-money.ts caps what is taken back at the credit). Logs too what re-credits give beyond what the debits took:
   * money the customer got on top of the credit, which the receipt does not count. A debit or re-credit in another
   * currency than the credit moves none of it (Stripe keeps a balance per currency), and is logged too.
   */
  function noteExcessReversal(effectId: string, cents: number, credit: CreditFact | null, debits: readonly CreditFact[], reCredits: readonly CreditFact[]): void {
    const currency = credit?.currency ?? null;
    const inCurrency = (move: CreditFact) => {
      if (currency === null || move.currency === null || move.currency === currency) return true;
      logger.warn({ effectId, object: move.id, amount: move.amount, currency: move.currency, creditCurrency: currency }, `${move.id} ${move.amount > 0 ? 'takes back' : 'gives back'} ${Math.abs(move.amount)} ${move.currency}, but the credit of effect ${effectId} is in ${currency}: none of it is counted`);
      return false;
    };
    const given = reCredits.filter(inCurrency).reduce((sum, move) => sum - move.amount, 0);
    let left = cents + given;
    for (const debit of [...debits].sort((a, b) => (a.created ?? 0) - (b.created ?? 0) || a.id.localeCompare(b.id))) {
      if (!inCurrency(debit)) continue;
      const counted = Math.min(debit.amount, left);
      if (counted < debit.amount) logger.warn({ effectId, object: debit.id, amount: debit.amount, counted }, `${debit.id} takes back ${debit.amount} cents of effect ${effectId}'s ${cents}-cent credit, of which ${left} were left${given > 0 ? ` (${given} given back by re-credits included)` : ''}: ${debit.amount - counted} cents are not counted`);
      left -= counted;
    }
    if (left > cents) logger.warn({ effectId, objects: reCredits.map((move) => move.id), beyond: left - cents }, `re-credits labelled with effect ${effectId} give back ${left - cents} cents more than debits took of its ${cents}-cent credit: the customer got that on top of the credit (its receipt counts it only as a second credit for the incident, where a re-credit is tagged with it)`);
  }

  /**
   * A customer deleted at Stripe: to each credit effect committed on it whose balance credit landed (the commit, or a
   * late landing, names it), one fact on that balance transaction, status `customer_deleted`, with the part of the
   * customer's balance at the deletion attributed to that credit (its `amount`, as Stripe has it: negative is credit;
   * deletionClaims) and the balance's `currency` (its `customerCurrency`). Stripe never invoices a deleted customer
   * again, so what the balance held then reaches no one; final-money.ts judges from these two whether the credit was
   * still in it. Stripe says only the balance, one sum over every credit: given whole to each credit, two $10 credits
   * with $10 left would both read lost, $20 claimed for $10. The event is the only record of that
   * balance: Stripe answers a deleted customer's retrieve with its `deleted: true` stub, without a balance, and 404s
   * the list of its balance transactions, so a re-read (the reconciler's, applyCredits) finds nothing to record and
   * leaves this fact standing. The deletion is checked at Stripe first (customerDeleted), as every fact is re-read
   * before it is recorded; Stripe never undeletes a customer, so the fact is final, and a redelivered event has its
   * key (recorded once). An event that says no balance records nothing, and is logged: the credit's fate cannot be
   * told from it.
   *
   * A credit whose send landed before the deletion may commit after it (its worker died after the send and recovery
   * settles it, a retry, the reconciler), or have its landing learned late: then no re-read can show the balance, and
   * the deletion must still reach it. So the deletion is kept for the customer (journal.noteCustomerDeletion: the first
   * one stands, for good) and the customer is marked in the step that lists its committed credits, as for a payment
   * fact: a credit committed before that step is listed and recorded now, one committed after it re-reads its facts at
   * its settle (settle-5 `reread`), and every re-read of a credit on the customer (that one, the reconciler's, a late
   * landing's) folds the kept deletion in (foldDeletion). Stripe deletes a customer once: another `customer.deleted`
   * for it, under another event id, is a replay or an edited copy, and the deletion kept first is the one recorded,
   * never its own. An effect that did not land on the customer (in flight, refused, AMBIGUOUS after a lookup that can
   * no longer read the deleted customer) gets nothing: no credit of its own is known to have landed. Should it commit
   * later, its commit folds the deletion in.
   */
  async function applyDeletion(eventId: string, eventType: string, deletion: Deletion, again: boolean): Promise<Applied[]> {
    const subject = `customer:${deletion.customer}`;
    // A customer nothing was ever dispatched on is none of the gate's: not read, nothing kept.
    if (!(await journal.subjectKnown(subject))) return [];
    if (reread && reader?.customerDeleted !== undefined && !(await reader.customerDeleted(deletion.customer))) {
      logger.warn({ event: eventId, customer: deletion.customer }, `event ${eventId} says customer ${deletion.customer} was deleted, but Stripe still has it; not recorded`);
      return [];
    }
    if (deletion.balance === null) {
      logger.warn({ event: eventId, customer: deletion.customer, effects: await journal.effectsOn(subject) }, `event ${eventId} says customer ${deletion.customer} was deleted but not what its balance held then; whether its credits were used cannot be told, and nothing was recorded`);
      return [];
    }
    const kept: KeptDeletion = { eventId, eventType, customer: deletion.customer, balance: deletion.balance, currency: deletion.currency, created: deletion.created };
    const noted = await journal.noteCustomerDeletion(subject, canonicalJson(kept));
    if (noted === null) return [];
    const standing = keptDeletionOf(noted.deletion);
    if (standing === null) {
      logger.error({ customer: deletion.customer, kept: noted.deletion.slice(0, 500) }, `the deletion kept for customer ${deletion.customer} cannot be read; nothing was recorded`);
      return [];
    }
    if (standing.eventId !== eventId) logger.warn({ event: eventId, first: standing.eventId, customer: deletion.customer }, `event ${eventId} says customer ${deletion.customer} was deleted, which event ${standing.eventId} said first: Stripe deletes a customer once, and the first deletion stands`);
    return recordDeletion(standing, noted.effects, () => again);
  }

  /**
   * The kept deletion of the customer a credit effect is on (applyDeletion), recorded on each credit committed on it
   * that holds none yet, with the part of the balance the parts given before left (deletionClaims). What a re-read of
   * a credit on a customer Stripe deleted adds: the re-read itself finds nothing there. `again`: the effect whose
   * re-read this is (its alerts are raised again when it holds the deletion already), null for none.
   */
  async function foldDeletion(partition: string, again: string | null): Promise<Applied[]> {
    if (!partition.startsWith('customer:')) return [];
    const text = await journal.customerDeletion(partition);
    if (text === null) return [];
    const kept = keptDeletionOf(text);
    if (kept === null) {
      logger.error({ subject: partition, kept: text.slice(0, 500) }, `the deletion kept for ${partition} cannot be read; nothing was recorded`);
      return [];
    }
    return recordDeletion(kept, await journal.effectsOn(partition), (effectId) => effectId === again);
  }

  /** Records `deletion` on the landed credits among `effects` that hold none yet (applyDeletion, foldDeletion). */
  async function recordDeletion(deletion: KeptDeletion, effects: readonly string[], again: (effectId: string) => boolean): Promise<Applied[]> {
    const landedCredits: LandedCredit[] = [];
    for (const effectId of effects) {
      const partition = await journal.partitionOf(effectId);
      if (partition === null) continue;
      const entries = await journal.entries(partition, effectId);
      const proposed = firstProposal(entries)?.effect;
      if (proposed?.kind !== 'credit') continue;
      const made = committedRefundOf(entries);
      if (made === null) continue;
      const { left, currency } = creditInBalance(entries, made, num(proposed.amount));
      landedCredits.push({ effectId, partition, made, left, currency, ...madeWhen(entries, made), deleted: deletedShare(entries, made) });
    }
    // Parts are handed out in one step with every part given before (by this process or another, now or earlier), so
    // the fact written below carries the part given for good: another process, or a retry, writes the same fact, a
    // duplicate, never a second part.
    const shares = await journal.shareDeletion(`customer:${deletion.customer}`, Math.max(0, -deletion.balance), deletionClaims(landedCredits, deletion.currency));
    const results: Applied[] = [];
    for (const { effectId, partition, made, deleted } of landedCredits) {
      if (deleted !== null) {
        // As appendTo does for a fact seen already: work that may have run before raises the alerts again.
        results.push({ effectId, appended: 0, duplicates: 1, alerts: again(effectId) ? await raiseAlerts(partition, effectId) : [] });
        continue;
      }
      const share = shares.get(made);
      // journal.shareDeletion answers a part for every credit asked, or throws.
      if (share === undefined) continue;
      const draft: Draft<'OBSERVED'> = {
        kind: 'OBSERVED',
        source: 'webhook',
        eventId: deletion.eventId,
        eventType: deletion.eventType,
        objectType: 'customer_balance_transaction',
        objectId: made,
        status: CUSTOMER_DELETED,
        failureReason: null,
        amount: share === 0 ? 0 : -share,
        charge: null,
        disputeStatus: null,
        disputeReason: null,
        created: deletion.created,
        customerCurrency: deletion.currency,
      };
      results.push(await appendTo(effectId, [draft], again(effectId)));
    }
    return results;
  }

  /**
   * Whether Stripe can no longer list the customer's balance transactions: its deletion was applied (kept for good:
   * Stripe never undeletes a customer), or Stripe says it is deleted now. False when the reader cannot say.
   */
  async function balanceGone(subject: string, customer: string): Promise<boolean> {
    if ((await journal.customerDeletion(subject)) !== null) return true;
    return reader?.customerDeleted !== undefined && (await reader.customerDeleted(customer));
  }

  /**
   * Whether a compensation at Stripe names an incident held on the subject by an effect not among its committed ones:
   * a credit in flight (or left ambiguous), which the compensation's alert waits for.
   */
  async function compensatesInFlight(subject: string, credits: readonly CreditFact[], committed: readonly string[]): Promise<boolean> {
    const holders = new Map<string, string | null>();
    for (const credit of credits) {
      if (credit.incident === null || (credit.objectType !== 'credit_note' && credit.amount >= 0)) continue;
      if (!holders.has(credit.incident)) holders.set(credit.incident, await journal.onceHolder(subject, incidentHold(credit.incident)));
      const holder = holders.get(credit.incident) ?? null;
      // The holder's own balance credit is tagged with its incident too: that one is the credit itself, no compensation.
      if (holder !== null && credit.effectId !== holder && !committed.includes(holder)) return true;
    }
    return false;
  }

  return {
    /**
     * Applies one verified Stripe event; events about payments the gate never touched append nothing. `again`: this
     * event's job ran before (retried after a failure, or taken over from a worker that stopped), so what it recorded
     * then may lack its alerts.
     */
    async applyEvent(event: StripeEvent, options: { again?: boolean } = {}): Promise<Applied[]> {
      const again = options.again ?? false;
      const named = namedBy(event);
      switch (named?.kind) {
        case 'refund':
          // A refund whose event shows its metadata naming no effect, on a payment nothing committed on, is not read at
          // Stripe: most refunds on an account are not the gate's, and a read for each would spend the account's rate
          // limit that the gate's own facts need. On a payment something committed on (asked of Redis alone), it may be
          // a committed refund whose metadata was cleared: read, and recorded on its committer (applyRefund).
          if (named.refund.effectId === null && typeof event.data.object.metadata === 'object' && event.data.object.metadata !== null && !(await committedOnPayment(named.refund))) return [];
          return applyRefund('webhook', event.id, event.type, named.refund, again);
        case 'refunded_charge': {
          // charge.refunded carries the charge: every refund on its payment is read, on a payment the gate dispatched on,
          // and recorded as a refund event's would be: on its committer, else on the effect its metadata names.
          const payment = `payment:${named.paymentIntent}`;
          if (!reader || !(await journal.subjectKnown(payment))) return [];
          const claims = await claimsOn(payment);
          const results: Applied[] = [];
          for (const found of await reader.refundsOf(named.paymentIntent)) {
            const committer = claims.get(found.id);
            const owner = committer ?? (found.effectId !== null && (await refundOfEffect(found.effectId, found, claims)) ? found.effectId : null);
            if (owner === null) continue;
            results.push(await appendTo(owner, [refundObserved('webhook', event.id, event.type, found)], again));
          }
          // A new refund on the charge changes what its payment's chargeback overlaps, on every receipt (followCharge).
          return [...results, ...(await followCharge(named.paymentIntent, again))];
        }
        case 'customer':
          return applyCredits('webhook', event.id, event.type, named.customer, null, again, event.type === 'customer.updated' ? event : undefined);
        case 'customer_deleted':
          return applyDeletion(event.id, event.type, named.deletion, again);
        case 'dispute': {
          if (named.paymentIntent !== null) return applyPayment('webhook', event, named.paymentIntent, [named.dispute], null, again);
          // The charge read to route it is the one its facts are weighed against: not read twice. Read before its chains
          // were, it may be older than a read recorded on them by then (applyPayment, overtaken): when it differs from
          // the latest recorded and stands once appended, the payment is read once more (one read more for an event that found
          // the charge changed; none for one that did not).
          const routed = await paymentOfDispute(event.id, named.dispute);
          return routed === null ? [] : applyPayment('webhook', event, routed.paymentIntent, [{ ...named.dispute, paymentIntent: routed.paymentIntent }], null, again, true, new Map([[routed.charge.id, routed.charge]]));
        }
        case 'unroutable':
          logger.warn({ event: event.id, type: event.type, why: named.why }, `event ${event.id} (${event.type}) was not applied: ${named.why}`);
          return [];
        case undefined:
          return [];
        default: {
          const never: never = named;
          return never;
        }
      }
    },

    /**
     * The effects an event concerns, from the event and the journal: a refund's effect named in its metadata, or the
     * effects committed on the payment or customer it names. A dispute that names only its charge names no payment the
     * journal knows: only then is Stripe read (its charge), and when Stripe cannot answer this throws
     * (effectsOnChargeOf), since the effects cannot be told, which is not none. What a facts job that failed for good hands to the
     * reconciler instead.
     */
    async concerned(event: StripeEvent): Promise<string[]> {
      const named = namedBy(event);
      switch (named?.kind) {
        case 'refund': {
          // The effect its metadata names, and the one that committed it (its metadata may have been cleared or changed).
          const effects = new Set<string>();
          if (named.refund.effectId !== null && (await journal.partitionOf(named.refund.effectId)) !== null) effects.add(named.refund.effectId);
          const committer = await committerOf(named.refund);
          if (committer !== null) effects.add(committer);
          return [...effects];
        }
        case 'refunded_charge':
          return journal.effectsOn(`payment:${named.paymentIntent}`);
        case 'dispute':
          if (named.paymentIntent !== null) return journal.effectsOn(`payment:${named.paymentIntent}`);
          // namedBy routes a dispute naming no PaymentIntent only when it names its charge.
          return named.dispute.charge === null ? [] : effectsOnChargeOf(named.dispute, named.dispute.charge);
        case 'customer':
          return journal.effectsOn(`customer:${named.customer}`);
        case 'customer_deleted':
          return journal.effectsOn(`customer:${named.deletion.customer}`);
        case 'unroutable':
        case undefined:
          return [];
        default: {
          const never: never = named;
          return never;
        }
      }
    },

    /** Re-reads one effect's refund and disputes (the reconciler, or on demand), appending what changed. */
    async reread(effectId: string): Promise<Applied[]> {
      if (!reader) return [];
      const partition = await journal.partitionOf(effectId);
      // A credit that committed (or landed late) after its customer's deletion was applied finds nothing at Stripe: the
      // kept deletion is folded in (foldDeletion).
      if (partition?.startsWith('customer:')) return [...(await applyCredits('reread', null, 'credit.reread', partition.slice('customer:'.length), effectId, true)), ...(await foldDeletion(partition, effectId))];
      if (partition === null || !partition.startsWith('payment:')) return [];
      return applyPayment('reread', null, partition.slice('payment:'.length), [], effectId, true);
    },
  };
}

export type FactsApplier = ReturnType<typeof createFactsApplier>;
