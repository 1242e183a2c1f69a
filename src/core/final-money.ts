// What finally happened to the money, from post-send facts (DESIGN §8). An object's final state is decided by
// its own lifecycle, never by the order facts arrived in: a failed refund never becomes succeeded again.
import { moneyText } from './money-text.js';
import type { Entry, EntryOf } from './entries.js';
import { isJsonObject, type Json } from './json.js';

/**
 * `unrecognized`: the status of the refund's latest fact when the code does not know it (a value Stripe added since):
 * it has no place in the lifecycle, so `status` keeps the last one known and the answer is unknown until a later fact
 * has a status the code knows. `currency`: the refund's (lowercase), when its commit result says it (refund facts do not).
 */
export type RefundFact = { id: string; status: string; amount: number | null; failureReason: string | null; charge: string | null; unrecognized?: string; currency?: string };
/**
 * `chargeAmount` and `chargeRefunded`: the disputed charge's amount and what was refunded on it when the dispute was
 * last read with its charge; absent on facts recorded before disputes carried them (the whole chargeback then counts).
 */
export type DisputeFact = { id: string; status: string; amount: number | null; reason: string | null; charge: string | null; chargeAmount?: number; chargeRefunded?: number };
export type MoneyStatus = 'returned' | 'not_returned' | 'pending' | 'unknown';

/**
 * A credit that landed in another currency than the one the customer is billed in: Stripe keeps a balance per currency
 * and applies each only to invoices in it, so the credit takes nothing off the customer's invoices. `cents`: what is
 * left of the credit once labelled debits took part of it back (net of re-credits), in `currency`: what a debit taking
 * it back takes, and what is at stake; `creditCents`: the credit's own amount. Both null when the receipt does not say
 * the effect's amount.
 */
export type CurrencyMismatch = { credit: string; cents: number | null; creditCents: number | null; currency: string; customerCurrency: string };

/**
 * The status of the fact src/facts/apply.ts records on a credit's own balance transaction when Stripe deletes its
 * customer (`customer.deleted`), and the final money's `failureReason` when the credit was still unused then.
 */
export const CUSTOMER_DELETED = 'customer_deleted';

/**
 * The customer of a landed credit deleted at Stripe: `credit`, the effect's balance transaction; `balance`, the part of
 * the customer's balance at the deletion attributed to this credit (as Stripe has it: negative is credit), and
 * `currency`, the balance's currency then (null when the customer had none). Stripe says only the balance, a sum over
 * every credit on the customer, so src/facts/apply.ts (applyDeletion) gives it out across the customer's landed credits,
 * newest first (invoices take a balance as one sum: the oldest credits are assumed used first), and the parts sum to at
 * most what the balance held; a credit that commits after the deletion was applied gets its part then, out of what the
 * parts given before left. A deletion recorded before the balance was given out carries the whole balance: for a
 * customer with one credit, the same.
 */
export type CustomerDeletion = { credit: string; balance: number | null; currency: string | null };

/**
 * The status of the fact src/facts/apply.ts records on a credit's own balance transaction when a `customer.updated` for
 * its customer is applied after Stripe deleted the customer: the balance moved (or may have), and the move can never be
 * read (Stripe 404s a deleted customer's balance transactions, for good). The fact's `amount` is the customer's balance
 * as the event carries it (negative is credit), its `eventId` the event's. Also the final money's `failureReason` then.
 */
export const BALANCE_UNREAD = 'balance_unread';

/**
 * A balance move of a deleted customer that no read saw (BALANCE_UNREAD): `credit`, the effect's balance transaction;
 * `event`, the first `customer.updated` recorded so; `cents`, what is left of the credit after the labelled debits that
 * were read (null when the receipt does not say the effect's amount): what the move may have taken back or used, in
 * `currency`, the credit's (null when its commit and facts do not say it).
 */
export type BalanceUnread = { credit: string; event: string | null; cents: number | null; currency: string | null };

/**
 * `refund`: the refund the effect committed (or a late landing recorded), whose facts decide `status`; null while
 * its facts are not in (or the send committed none), and then the first refund recorded decides. `currencyMismatch`:
 * set (with `failureReason` `currency_mismatch`) when the credit landed in a currency the customer is not billed in.
 * `customerDeleted`: set (with `failureReason` `customer_deleted`) when the customer was deleted with the credit unused.
 */
export type FinalMoney = {
  status: MoneyStatus;
  refund: RefundFact | null;
  refunds: RefundFact[];
  failureReason: string | null;
  disputes: DisputeFact[];
  currencyMismatch?: CurrencyMismatch;
  customerDeleted?: CustomerDeletion & { cents: number | null };
  balanceUnread?: BalanceUnread;
};

/**
 * Money at stake with one refund of a payment charged back. `paymentTwiceCents`: what the refunds and the chargebacks on
 * the refund's charge returned twice in all, the part of them beyond the charge (`chargeCents`, of which `refundedCents`
 * was refunded when the chargebacks were read with it, the refund included). `cents`: this refund's share of it, at most
 * the refund. The payment's refunds share it the newest first (deriveExposure): `newerCents` is what was refunded on the
 * charge by refunds made after this one (the gate's or anyone's), which take their share before it, so the shares of
 * all the receipts on the payment add up to at most `paymentTwiceCents`. `newerCents` is null when the receipt holds no
 * list of the charge's refunds (the charge held only this refund when read, or the facts were recorded before lists
 * were): the share is then all of the overlap up to the refund. `chargeCents`, `refundedCents` and `paymentTwiceCents`
 * are null when a chargeback's fact does not carry its charge (recorded before facts did): `cents` is then the refund
 * plus the chargebacks, as receipts signed then read. Amounts are in the smallest unit of `currency` (the refund's,
 * null when its commit result does not say it). `dispute` is the first chargeback (`disputes` all of them, `statuses`
 * theirs in the same order).
 */
export type Exposure = {
  cents: number;
  paymentTwiceCents: number | null;
  newerCents: number | null;
  refundCents: number;
  chargebackCents: number;
  chargeCents: number | null;
  refundedCents: number | null;
  currency: string | null;
  refund: string;
  charge: string | null;
  dispute: string;
  disputes: string[];
  statuses: string[];
  sentence: string;
};

const REFUND_RANK: Record<string, number> = { requires_action: 0, pending: 1, succeeded: 2, failed: 3, canceled: 3 };
const DISPUTE_RANK: Record<string, number> = {
  warning_needs_response: 0,
  warning_under_review: 1,
  warning_closed: 2,
  needs_response: 3,
  under_review: 4,
  won: 5,
  lost: 5,
  // An appeal of a lost chargeback comes after it and ends won or lost again: the same rank, so the newest stands.
  appeal_needs_response: 5,
  appeal_under_review: 5,
  prevented: 5,
  charge_refunded: 5,
};

/**
 * A chargeback withdraws the disputed amount from the merchant; an inquiry (`warning_*`) does not, nor does a
 * dispute that was prevented or closed because the charge was refunded.
 */
const CHARGEBACK_STATUSES = new Set(['needs_response', 'under_review', 'won', 'lost', 'appeal_needs_response', 'appeal_under_review']);

export function isChargeback(status: string): boolean {
  return CHARGEBACK_STATUSES.has(status);
}

/** Dispute statuses known to withdraw nothing: an inquiry (`warning_*`), a dispute prevented, one closed as refunded. */
const NEVER_CHARGEBACK = new Set(['prevented', 'charge_refunded']);

/**
 * Whether a dispute may be a chargeback, as a decision's premises count it (the `chargebacks` fact): every status
 * isChargeback counts, and a status Stripe adds later too (refusing on it is safe; the money model waits to know it).
 * The known statuses that withdraw nothing are never counted, so the premise and the final money agree on them.
 */
export function mayBeChargeback(status: string): boolean {
  return !status.startsWith('warning_') && !NEVER_CHARGEBACK.has(status);
}

function rank(table: Record<string, number>, status: string): number {
  return table[status] ?? -1;
}

/** A refund-shaped object inside a commit result, if the target returned one. */
export function refundFromResult(result: Json): RefundFact | null {
  if (!isJsonObject(result)) return null;
  if (result.object !== 'refund' || typeof result.id !== 'string' || typeof result.status !== 'string') return null;
  return {
    id: result.id,
    status: result.status,
    amount: typeof result.amount === 'number' ? result.amount : null,
    failureReason: typeof result.failure_reason === 'string' ? result.failure_reason : null,
    charge: typeof result.charge === 'string' ? result.charge : null,
    ...(typeof result.currency === 'string' ? { currency: result.currency.toLowerCase() } : {}),
  };
}

function mergeRefund(known: RefundFact | undefined, next: RefundFact): RefundFact {
  if (!known) return next;
  // A status Stripe added after this code was written cannot be ranked against the ones it knows: what is known stays,
  // and the answer is unknown until a later fact says something the code knows (DESIGN §3: it never guesses).
  if (!Object.hasOwn(REFUND_RANK, next.status)) return { ...known, unrecognized: next.status };
  const keepKnown = rank(REFUND_RANK, known.status) > rank(REFUND_RANK, next.status);
  const winner = keepKnown ? known : next;
  return {
    id: known.id,
    status: winner.status,
    amount: winner.amount ?? known.amount ?? next.amount,
    failureReason: winner.failureReason ?? (keepKnown ? next.failureReason : known.failureReason),
    charge: known.charge ?? next.charge,
    ...((known.currency ?? next.currency) === undefined ? {} : { currency: known.currency ?? next.currency }),
  };
}

function mergeDispute(known: DisputeFact | undefined, next: DisputeFact): DisputeFact {
  if (!known) return next;
  const winner = rank(DISPUTE_RANK, known.status) > rank(DISPUTE_RANK, next.status) ? known : next;
  // The charge as last read: what is refunded on it has no lifecycle to rank (a refund can come or fail at any time), so
  // the latest fact that read it stands. Two facts jobs can append in the other order than they read in; the facts
  // worker then records the next read that differs from the latest again (src/facts/apply.ts, chargeReadTurn), so a
  // stale read stands only until the charge is read again.
  const read = next.chargeAmount !== undefined ? next : known;
  const charge = read.chargeAmount === undefined || read.chargeRefunded === undefined ? {} : { chargeAmount: read.chargeAmount, chargeRefunded: read.chargeRefunded };
  return { id: known.id, status: winner.status, amount: winner.amount ?? known.amount, reason: winner.reason ?? known.reason, charge: known.charge ?? next.charge, ...charge };
}

/**
 * Another party's compensation recorded on a credit: a credit note tagged with its incident (`void` once billing took
 * it back), or a balance credit tagged with it that this effect's send did not make (`amount` as Stripe has it,
 * negative). `incident`: what the object's latest fact says its metadata names; undefined for facts recorded before
 * facts carried it, which were recorded because they named the credit's incident. `currency`: a credit note's, when a
 * fact recorded it (its amount is in that currency's minor unit); undefined when none did, which says nothing of it
 * (never take it for the credit's). A balance transaction's is recorded only when it is in another currency than the
 * credit's (src/facts/apply.ts): one without is in the credit's, as they were before currencies were recorded.
 */
export type CreditNoteFact = { id: string; status: string | null; amount: number | null; incident?: string | null; currency?: string | null };

/**
 * A balance transaction's currency (null when no fact says it), and the one the customer was billed in when its
 * latest fact that says so was read (null for none).
 */
export type CreditCurrency = { currency: string | null; customerCurrency: string | null };

/** A re-credit (MoneyFacts): cents given back, its currency, and the incident its metadata names (null for none). */
export type ReCredit = { cents: number; currency: string | null; incident: string | null };

/**
 * `credits`: ids of the effect's own balance credits seen at Stripe; `creditNotes`: the credit notes recorded on it,
 * and `otherCredits`: the balance credits others made for its incident, and their debits taking those back, each in
 * its latest state. `reversals`: the debits labelled with the effect that took its credit back, by id, in cents
 * (positive, as Stripe has them) and their currency (null when no fact says it). `reCredits`: the credits labelled with
 * the effect that its send did not make (how a take-back is undone: Stripe cannot delete a balance transaction), by id,
 * in cents given (positive: Stripe has them negative), with their currency and the incident their metadata names (null
 * for none). `currencies`: the currencies of the balance transactions the effect's send made, by id, from its commit
 * and its own credit's facts. `deletion`: the deletion of the customer holding the effect's own credit, when recorded.
 * `unread`: the first balance move of that customer recorded as unread (BALANCE_UNREAD), when one was.
 */
export type MoneyFacts = {
  refunds: Map<string, RefundFact>;
  disputes: Map<string, DisputeFact>;
  credits: Set<string>;
  creditNotes: Map<string, CreditNoteFact>;
  otherCredits: Map<string, CreditNoteFact>;
  reversals: Map<string, { cents: number; currency: string | null }>;
  reCredits: Map<string, ReCredit>;
  currencies: Map<string, CreditCurrency>;
  deletion?: CustomerDeletion;
  unread?: { credit: string; event: string | null };
  chargeRefunds?: Map<string, ChargeRefund>;
};

/**
 * A refund on a chargeback's charge as the charge listed it when the chargeback was read (src/facts/apply.ts records one
 * fact per refund, `objectType` `charge`, on every receipt on the payment, once the charge holds two refunds or more):
 * the gate's refunds for any effect and those made by hand alike, each in its latest state (`created`: Stripe's,
 * seconds). It is no refund of the effect's: only deriveExposure reads it, to give the payment's overlap out among the
 * refunds on the charge.
 */
export type ChargeRefund = RefundFact & { created: number | null };

const str = (value: Json | undefined): string | null => (typeof value === 'string' ? value : null);

/** Folds the commit result and every OBSERVED entry into the latest state of each object. */
export function collectMoneyFacts(entries: readonly Entry[]): MoneyFacts {
  const refunds = new Map<string, RefundFact>();
  const disputes = new Map<string, DisputeFact>();
  const credits = new Set<string>();
  const creditNotes = new Map<string, CreditNoteFact>();
  const otherCredits = new Map<string, CreditNoteFact>();
  const reversals = new Map<string, { cents: number; currency: string | null }>();
  const reCredits = new Map<string, ReCredit>();
  const currencies = new Map<string, CreditCurrency>();
  // The objects the effect's own sends made (its commit, a late landing): never another party's compensation, whatever
  // incident a fact recorded for them says (metadata can be edited at Stripe).
  const made = new Set<string>();
  for (const entry of entries) {
    if ((entry.kind === 'COMMITTED' || (entry.kind === 'LATE_RESULT' && entry.outcome === 'landed')) && isJsonObject(entry.result) && typeof entry.result.id === 'string') {
      made.add(entry.result.id);
      // A balance credit's commit result names its currency (the credit target's summary): what a fact without one lacks.
      if (entry.result.object === 'customer_balance_transaction') currencies.set(entry.result.id, { currency: str(entry.result.currency)?.toLowerCase() ?? null, customerCurrency: null });
    }
  }
  const facts: MoneyFacts = { refunds, disputes, credits, creditNotes, otherCredits, reversals, reCredits, currencies, chargeRefunds: new Map() };
  for (const entry of entries) {
    if (entry.kind === 'COMMITTED' || entry.kind === 'LATE_RESULT') {
      if (entry.kind === 'LATE_RESULT' && entry.outcome !== 'landed') continue;
      const refund = refundFromResult(entry.result);
      if (refund) refunds.set(refund.id, mergeRefund(refunds.get(refund.id), refund));
    } else if (entry.kind === 'OBSERVED') {
      foldObserved(entry, facts, made);
    }
  }
  return facts;
}

/**
 * The incident a compensation's latest fact names: metadata can be edited at Stripe, so the newest recorded fact
 * decides (re-tagging has no lifecycle; the chain's order is the order it was read in). A fact without the field keeps
 * what was known.
 */
const incidentAfter = (entry: EntryOf<'OBSERVED'>, known: CreditNoteFact | undefined) => (entry.incident === undefined ? known?.incident : entry.incident);

function foldObserved(entry: EntryOf<'OBSERVED'>, facts: MoneyFacts, made: ReadonlySet<string>): void {
  const { refunds, disputes, credits, creditNotes, otherCredits, reversals, reCredits, currencies } = facts;
  switch (entry.objectType) {
    case 'refund':
      if (entry.status !== null) {
        const fact: RefundFact = { id: entry.objectId, status: entry.status, amount: entry.amount, failureReason: entry.failureReason, charge: entry.charge };
        refunds.set(fact.id, mergeRefund(refunds.get(fact.id), fact));
      }
      return;
    case 'dispute': {
      const status = entry.disputeStatus ?? entry.status;
      if (status !== null) {
        const read = typeof entry.chargeAmount === 'number' && typeof entry.chargeRefunded === 'number' ? { chargeAmount: entry.chargeAmount, chargeRefunded: entry.chargeRefunded } : {};
        const fact: DisputeFact = { id: entry.objectId, status, amount: entry.amount, reason: entry.disputeReason, charge: entry.charge, ...read };
        disputes.set(fact.id, mergeDispute(disputes.get(fact.id), fact));
      }
      return;
    }
    // The effect's own balance credit carries no incident; one that does is another party's compensation for the
    // incident (a balance credit billing tagged with it, or billing's debit taking one back), evidence of a second one,
    // not of this effect's landing. A debit (positive at Stripe) without an incident is one labelled with the effect:
    // its credit taken back, neither a landing nor another party's compensation. The facts worker recorded no debit
    // before reversals counted, and none with an incident before billing's debits were netted, so no receipt signed
    // earlier reads otherwise now. A fact that names currencies keeps them, the latest standing.
    // A credit (negative) with its currency but not the customer's, that the send did not make, is a re-credit: labelled
    // with the effect, it gives back what a debit took (src/facts/apply.ts records it so, with the incident it is tagged
    // with, once the credit landed). No fact recorded before re-credits were is read as one: the effect's own credit has
    // been recorded with the customer's currency (null included) since facts carried currencies, another party's
    // compensation with a currency only beside the customer's (one in another currency than the credit's), and no fact
    // carried one before. Its latest recorded role stands: a credit
    // labelled with the effect and tagged with the incident was recorded as another party's compensation before.
    case 'customer_balance_transaction': {
      // The deletion of the customer holding the effect's own credit (src/facts/apply.ts, applyDeletion): its amount is
      // the part of the customer's balance then attributed to the credit (CustomerDeletion), not a move of money, so
      // none of the roles below. Only on the credit its send made. Stripe deletes a customer once, and never undeletes
      // it: the first deletion recorded stands, and a second one (an event replayed or edited under another id,
      // recorded by a version that did not refuse it) changes nothing.
      if (entry.status === CUSTOMER_DELETED) {
        if (made.has(entry.objectId) && facts.deletion === undefined) facts.deletion = { credit: entry.objectId, balance: entry.amount, currency: entry.customerCurrency ?? null };
        return;
      }
      // A move of the deleted customer's balance no read saw (BALANCE_UNREAD): no money moved by the fact itself.
      if (entry.status === BALANCE_UNREAD) {
        if (made.has(entry.objectId) && facts.unread === undefined) facts.unread = { credit: entry.objectId, event: entry.eventId };
        return;
      }
      if (entry.amount !== null && entry.amount > 0 && entry.incident === undefined && !made.has(entry.objectId)) {
        reversals.set(entry.objectId, { cents: entry.amount, currency: entry.currency ?? reversals.get(entry.objectId)?.currency ?? null });
        return;
      }
      if (entry.amount !== null && entry.amount < 0 && entry.currency !== undefined && entry.customerCurrency === undefined && !made.has(entry.objectId)) {
        reCredits.set(entry.objectId, { cents: -entry.amount, currency: entry.currency, incident: entry.incident ?? null });
        otherCredits.delete(entry.objectId);
        return;
      }
      if (entry.incident === undefined || made.has(entry.objectId)) {
        // Once the commit (or a late landing) names the credit the send made, that one is the effect's own and no other
        // is: a fact recorded as its own about another object (before src/facts/apply.ts held back, while the dispatch
        // was open, a credit someone labelled by hand with the effect's id and amount) is not the effect's money, and its
        // currency says nothing of where the effect's credit went.
        if (made.size > 0 && !made.has(entry.objectId)) return;
        credits.add(entry.objectId);
        const known = currencies.get(entry.objectId);
        currencies.set(entry.objectId, { currency: entry.currency ?? known?.currency ?? null, customerCurrency: entry.customerCurrency === undefined ? (known?.customerCurrency ?? null) : entry.customerCurrency });
        return;
      }
      // Billing's, in another currency than the credit's when it names its currency (with the customer's, which tells
      // it from a re-credit: src/facts/apply.ts creditObserved). A balance transaction's currency never changes.
      const known = otherCredits.get(entry.objectId);
      const currency = entry.currency?.toLowerCase() ?? known?.currency ?? undefined;
      otherCredits.set(entry.objectId, { id: entry.objectId, status: entry.status, amount: entry.amount ?? known?.amount ?? null, incident: entry.incident, ...(currency === undefined ? {} : { currency }) });
      reCredits.delete(entry.objectId);
      return;
    }
    // A credit note tagged with the credit's incident is another party's compensation (billing's), recorded on the
    // credit as evidence of a second one; it says nothing of whether this effect's own credit landed. A voided note
    // stays void (Stripe never reissues one), whatever order its facts were recorded in.
    case 'credit_note': {
      const known = creditNotes.get(entry.objectId);
      const incident = incidentAfter(entry, known);
      const status = known?.status === 'void' ? 'void' : entry.status;
      const currency = entry.currency?.toLowerCase() ?? known?.currency ?? undefined;
      creditNotes.set(entry.objectId, { id: entry.objectId, status, amount: known?.status === 'void' ? known.amount : (entry.amount ?? known?.amount ?? null), ...(incident === undefined ? {} : { incident }), ...(currency === undefined ? {} : { currency }) });
      return;
    }
    // A refund on a chargeback's charge as the charge listed it (ChargeRefund): its lifecycle decides its state, as a
    // refund fact's does, so a refund failed since is not counted again whatever order the reads were recorded in.
    case 'charge':
      if (entry.status !== null) {
        const known = facts.chargeRefunds?.get(entry.objectId);
        const fact: RefundFact = { id: entry.objectId, status: entry.status, amount: entry.amount, failureReason: entry.failureReason, charge: entry.charge };
        facts.chargeRefunds?.set(entry.objectId, { ...mergeRefund(known, fact), created: known?.created ?? entry.created });
      }
      return;
    default: {
      const never: never = entry.objectType;
      return never;
    }
  }
}

/**
 * The money answer. `happened` is the journal's answer about the send; the facts decide what happened to the
 * money afterwards. An effect that never fired returned nothing, whatever a fact claims (verify flags that).
 * `committed` names the refund the effect committed (or a late landing recorded), when known: its facts decide,
 * not those of another refund recorded on the effect before it committed (verify flags that one). `cents`: the effect's
 * amount; a credit whose debits took back at least that much (net of re-credits, reversedCents) left the customer
 * nothing. Re-credits beyond the debits leave the credit standing: returned, the credit counted once. What they gave
 * beyond what was taken back is money the customer got on top of this effect's credit, by someone's hand: not this
 * effect's money, so the final money neither counts it nor reads otherwise for it (the facts worker logs it). Tagged with
 * the credit's incident, it is a second credit for the incident (deriveSecondCompensation).
 */
export function deriveFinalMoney(facts: MoneyFacts, happened: boolean | 'unknown', effectKind: string | null, committed: readonly string[] = [], cents: number | null = null): FinalMoney {
  const refunds = [...facts.refunds.values()];
  const disputes = [...facts.disputes.values()];
  const own = refunds.find((fact) => committed.includes(fact.id)) ?? null;
  const refund = own ?? refunds[0];
  const failed = refund?.status === 'failed' || refund?.status === 'canceled' ? refund : undefined;
  const failureReason = failed ? (failed.failureReason ?? failed.status) : null;
  const base = { refund: own, refunds, failureReason, disputes };
  if (happened === false) return { status: 'not_returned', ...base };
  if (refund) {
    if (refund.unrecognized !== undefined) return { status: 'unknown', ...base };
    switch (refund.status) {
      case 'succeeded':
        return { status: 'returned', ...base };
      case 'failed':
      case 'canceled':
        return { status: 'not_returned', ...base };
      case 'pending':
      case 'requires_action':
        return { status: 'pending', ...base };
      default:
        return { status: 'unknown', ...base };
    }
  }
  if (effectKind !== 'refund' && cents !== null && reversedCents(facts, cents) >= cents) return { status: 'not_returned', ...base };
  // A credit still unused when its customer was deleted reaches no invoice: Stripe never invoices a deleted customer
  // again. The later word: a credit in the wrong currency whose customer is gone can no longer be taken back either.
  const deleted = effectKind === 'refund' ? null : wipedByDeletion(facts, cents);
  // `cents`: what the customer lost of the credit, what is left of it after labelled debits took part of it back.
  if (deleted !== null) return { status: 'not_returned', ...base, failureReason: CUSTOMER_DELETED, customerDeleted: { ...deleted, cents: cents === null ? null : cents - reversedCents(facts, cents) } };
  // A credit that sits in a balance the customer's invoices never use did not reach the customer, whatever the gate said.
  const mismatch = effectKind === 'refund' ? null : currencyMismatch(facts, cents);
  if (mismatch !== null) return { status: 'not_returned', ...base, failureReason: 'currency_mismatch', currencyMismatch: mismatch };
  // What is left makes the credit `returned`: in the customer's balance, or used off a bill (a deletion that found less
  // of it in the balance reads it used, wipedByDeletion). Neither holds once a move of the customer's balance came that
  // no read saw and none ever can (Stripe 404s a deleted customer's balance transactions): a debit labelled with the
  // effect taking the credit back reads `not_returned` when it is read, and an invoice using it `returned`, and the
  // event that announced the move (`customer.updated`) carries the customer, not the balance transaction, so it cannot
  // tell them apart. The answer is unknown then, and a person is asked (alert-rules.ts). The readings above stand: a
  // credit taken back in full by debits that were read, or still unused at the deletion, was not the customer's money
  // whatever else moved the balance.
  if (effectKind !== 'refund' && facts.unread !== undefined) return { status: 'unknown', ...base, failureReason: BALANCE_UNREAD, balanceUnread: { ...facts.unread, cents: cents === null ? null : cents - reversedCents(facts, cents), currency: ownCurrency(facts) } };
  if (effectKind !== 'refund' && facts.credits.size > 0) return { status: 'returned', ...base };
  if (happened === true && effectKind !== 'refund') return { status: 'returned', ...base };
  return { status: 'unknown', ...base };
}

/**
 * An amount the receipt records for the object the effect's send made that is not the effect's amount: `object`, the
 * refund or balance credit; `cents`, the amount recorded, as the effect counts it (a balance credit's as given:
 * Stripe has it negative); `effectCents`, the effect's amount, the one approved; `entries`, the indexes of the entries
 * that record it (a commit's or late landing's result, facts read since), in order; `latest`, whether the object's
 * latest recorded amount is this one, which is then the money at Stripe as last read.
 */
export type LandedAmountMismatch = { object: string; objectType: 'refund' | 'customer_balance_transaction'; cents: number; effectCents: number; entries: number[]; latest: boolean };

/**
 * The amounts other than the effect's (`cents`) that the receipt records for its own landed objects (`own`: the
 * refund or balance credit its commit or late landing names, else the ones whose facts decide the final money), one per
 * object and amount. The send asked Stripe for the effect's amount, and Stripe never changes a refund's or a balance
 * transaction's amount afterwards: another amount on the object (a target that answered a refund of 1 cent for one of
 * 2000, a commit result altered before it was signed, a balance credit Stripe reports at another amount) means the
 * money that moved is not what was approved and reported sent. The lifecycle still decides the final money's status
 * (a succeeded refund of 1 cent did go back, in part); verify() says the amounts differ. Facts that carry no move of
 * the object's own money are not read: a deletion's share of the customer's balance (CUSTOMER_DELETED) and a balance
 * move no read saw (BALANCE_UNREAD). One that carries no amount says nothing of it.
 */
export function landedAmountMismatches(entries: readonly Entry[], own: readonly string[], cents: number | null): LandedAmountMismatch[] {
  if (cents === null || own.length === 0) return [];
  // A set: an ambiguous credit's own objects may be every balance credit its facts name, one per entry.
  const owned = new Set(own);
  const recorded = new Map<string, { objectType: LandedAmountMismatch['objectType']; amounts: { cents: number; entry: number }[] }>();
  const record = (object: string, objectType: LandedAmountMismatch['objectType'], amount: number, entry: number) => {
    if (!owned.has(object)) return;
    const known = recorded.get(object) ?? { objectType, amounts: [] };
    // A balance credit is negative at Stripe and the effect's amount is what it gives: compared as the effect counts it.
    known.amounts.push({ cents: objectType === 'refund' ? amount : -amount, entry });
    recorded.set(object, known);
  };
  entries.forEach((entry, index) => {
    if (entry.kind === 'COMMITTED' || (entry.kind === 'LATE_RESULT' && entry.outcome === 'landed')) {
      const result = entry.result;
      if (!isJsonObject(result) || typeof result.id !== 'string' || typeof result.amount !== 'number') return;
      if (result.object === 'refund' || result.object === 'customer_balance_transaction') record(result.id, result.object, result.amount, index);
    } else if (entry.kind === 'OBSERVED' && entry.amount !== null) {
      if (entry.objectType === 'refund') record(entry.objectId, 'refund', entry.amount, index);
      else if (entry.objectType === 'customer_balance_transaction' && entry.status !== CUSTOMER_DELETED && entry.status !== BALANCE_UNREAD) record(entry.objectId, 'customer_balance_transaction', entry.amount, index);
    }
  });
  const mismatches: LandedAmountMismatch[] = [];
  for (const [object, { objectType, amounts }] of recorded) {
    const latest = amounts.at(-1)?.cents;
    const others = new Map<number, number[]>();
    for (const amount of amounts) {
      if (amount.cents === cents) continue;
      const at = others.get(amount.cents);
      if (at === undefined) others.set(amount.cents, [amount.entry]);
      else at.push(amount.entry);
    }
    for (const [other, at] of others) mismatches.push({ object, objectType, cents: other, effectCents: cents, entries: at, latest: other === latest });
  }
  return mismatches;
}

/**
 * What a credit effect's chain says of its balance credit `credit` for a deletion of its customer to be given out
 * (src/facts/apply.ts, applyDeletion): `left`, what is left of it (`cents`, its amount, less what labelled debits took
 * back: reversedCents; null when the amount is not known), which is all of the balance it can be attributed; and
 * `currency`, the credit's, as wipedByDeletion reads it (null when no fact says it).
 */
export function creditInBalance(entries: readonly Entry[], credit: string, cents: number | null): { left: number | null; currency: string | null } {
  const facts = collectMoneyFacts(entries);
  return { left: cents === null ? null : cents - reversedCents(facts, cents), currency: facts.currencies.get(credit)?.currency ?? ownCurrency(facts) };
}

/** The currency of the effect's own balance credit, when a fact or its commit says it. */
function ownCurrency(facts: MoneyFacts): string | null {
  for (const known of facts.currencies.values()) if (known.currency !== null) return known.currency;
  return null;
}

/**
 * The balance transactions labelled with the effect that its send did not make, netted as the customer's balance adds
 * them up (in any order): `taken`, what the debits took net of the re-credits (a take-back undone: Stripe cannot delete
 * a balance transaction, so a new credit is how a mistaken debit is undone), never below nothing; `again`, the part
 * of what the re-credits gave beyond the debits that re-credits tagged with `incident` gave (re-credits not tagged with
 * it offset the debits first), and `tagged`, their ids. A debit or re-credit in another currency than the credit moves
 * none of it: Stripe keeps a balance per currency. One whose currency no fact says counts (facts recorded before they
 * said it).
 */
function labelledMoves(facts: MoneyFacts, incident: string | null): { taken: number; again: number; tagged: string[] } {
  const currency = ownCurrency(facts);
  const inCurrency = <T extends { currency: string | null }>(moves: ReadonlyMap<string, T>) => [...moves].filter(([, move]) => currency === null || move.currency === null || move.currency === currency);
  const sum = (moves: readonly (readonly [string, { cents: number }])[]) => moves.reduce((total, [, move]) => total + move.cents, 0);
  const debits = sum(inCurrency(facts.reversals));
  const reCredits = inCurrency(facts.reCredits);
  const tagged = reCredits.filter(([, move]) => incident !== null && move.incident === incident);
  const given = sum(reCredits);
  const beyond = Math.max(0, given - debits);
  return { taken: Math.max(0, debits - given), again: Math.min(beyond, sum(tagged)), tagged: tagged.map(([id]) => id) };
}

/**
 * Cents the labelled debits took back of the credit, net of the re-credits (labelledMoves), at most `cents` (the
 * credit: debits beyond it take back the credit, not more).
 */
function reversedCents(facts: MoneyFacts, cents: number | null): number {
  const { taken } = labelledMoves(facts, null);
  return cents === null ? taken : Math.min(taken, cents);
}

/**
 * The deletion of the credit's customer, when the credit was still unused then, or null. Stripe keeps one balance per
 * currency and does not say which credit an invoice used: the balance is a sum, given out across the customer's
 * credits by src/facts/apply.ts (CustomerDeletion: newest first), so that two credits never both claim the same money.
 * The credit is judged unused when the part of the balance attributed to it still held at least what is left of it
 * (`cents` less what labelled debits took back, reversedCents) as credit, in the credit's currency (a customer with no
 * currency takes the credit's, as currencyMismatch does), or when the credit sat in another currency than the
 * customer's (currencyMismatch, or a deletion in another currency than the credit's): such a credit never reached an
 * invoice. A part holding less than that (some of it, nothing, or a debt) is read as the credit used, in part at
 * least: invoices took it (or debits did), and the receipt does not answer not_returned for money that may have come
 * off the customer's bills; it stays returned. Null too when the credit's amount is not known (a receipt that does not
 * say it).
 */
function wipedByDeletion(facts: MoneyFacts, cents: number | null): CustomerDeletion | null {
  // Recorded only on the credit the effect's send made (collectMoneyFacts): its commit or late landing proves it landed,
  // whether or not a fact about it was read before Stripe deleted the customer (a credit committed after the deletion
  // was applied has none: Stripe 404s a deleted customer's balance transactions).
  const deletion = facts.deletion;
  if (deletion === undefined) return null;
  const own = facts.currencies.get(deletion.credit)?.currency ?? ownCurrency(facts);
  if (currencyMismatch(facts, cents) !== null || (own !== null && deletion.currency !== null && own !== deletion.currency)) return deletion;
  if (cents === null || deletion.balance === null) return null;
  return -deletion.balance >= cents - reversedCents(facts, cents) ? deletion : null;
}

/**
 * The effect's own balance credit seen in another currency than the one its latest fact says the customer is billed in
 * (a customer billed in none yet takes the credit's currency: no mismatch), or null. `cents`: the credit's amount; the
 * mismatch carries what is left of it, which is what still sits in the wrong balance.
 */
function currencyMismatch(facts: MoneyFacts, cents: number | null): CurrencyMismatch | null {
  for (const [credit, known] of facts.currencies) {
    if (!facts.credits.has(credit) || known.currency === null || known.customerCurrency === null || known.currency === known.customerCurrency) continue;
    return { credit, cents: cents === null ? null : cents - reversedCents(facts, cents), creditCents: cents, currency: known.currency, customerCurrency: known.customerCurrency };
  }
  return null;
}

/**
 * What was refunded on the chargebacks' charge and its amount, when every chargeback's fact read it (null otherwise):
 * the largest refunded amount read (refunds only add up, but for one that fails), never less than `refundCents` (this
 * effect's refund is out, so it is refunded on the charge even if the read came before it).
 */
function chargeRead(chargebacks: readonly DisputeFact[], refundCents: number): { amount: number; refunded: number } | null {
  const amounts: number[] = [];
  const refunded: number[] = [refundCents];
  for (const dispute of chargebacks) {
    if (dispute.chargeAmount === undefined || dispute.chargeRefunded === undefined) return null;
    amounts.push(dispute.chargeAmount);
    refunded.push(dispute.chargeRefunded);
  }
  return amounts.length === 0 ? null : { amount: Math.max(...amounts), refunded: Math.max(...refunded) };
}

/** The order the refunds on a charge were made in: by Stripe's `created`, then by id (refunds made in one second). */
const madeBefore = (a: ChargeRefund, b: ChargeRefund) => (a.created ?? 0) - (b.created ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * What refunds on `charge` made after `refund` refunded (those not failed or canceled: what the charge counts as
 * refunded), from the charge's refunds as the receipt last read them (`onCharge`, ChargeRefund); null when it holds none
 * on the charge. A refund the list does not hold was made after it was read: the newest, with none after it.
 */
function refundedAfter(refund: RefundFact, charge: string | null, onCharge: readonly ChargeRefund[]): number | null {
  const listed = onCharge.filter((other) => charge === null || other.charge === null || other.charge === charge);
  const own = listed.find((other) => other.id === refund.id);
  if (listed.length === 0) return null;
  if (own === undefined) return 0;
  const counted = (other: ChargeRefund) => other.status !== 'failed' && other.status !== 'canceled';
  return listed.filter((other) => other.id !== refund.id && counted(other) && madeBefore(own, other) < 0).reduce((sum, other) => sum + (other.amount ?? 0), 0);
}

/**
 * A refund that went out on a charge that was later charged back: what the refunds and the chargebacks returned beyond
 * the charge, the customer got twice and the merchant is out twice. A chargeback of only the part no refund returned
 * (an issuer disputing what is left of a partly refunded charge) overlaps nothing: no exposure. The overlap is the
 * payment's (`paymentTwiceCents`), and the refunds on the charge share it the newest first: the charge could return
 * what it held less what was charged back, the refunds made first fit in that, and the newest are the ones that went
 * past it. So this refund's share (`cents`) is what is left of the overlap once the refunds made after it
 * (`onCharge`, the charge's refunds as the receipt last read them: the gate's for other effects and those made by hand
 * alike) took theirs, at most the refund; every receipt on the payment works its share out alike from the same reads,
 * and the shares add up to at most the overlap. A refund that takes none of it is no exposure of its receipt. Without
 * a list of the charge's refunds (it held only this one when read, or the facts were recorded before lists were) the
 * share is the overlap up to the refund. A chargeback whose fact does not carry its charge (recorded before facts did)
 * counts whole with the refund, as receipts signed then read. The committed refund's facts decide, as they decide the
 * final money: another refund recorded on the effect (verify flags it) is not this effect's money. Only while no
 * committed refund's facts are in does any refund of the effect that went out count. The sentence says where the
 * chargebacks counted stand, as the alert's action does (alert-rules.ts): while one is still open (awaiting a response,
 * under review, under appeal) winning it would give the money back, so "unless the dispute is won"; once every one is
 * lost the money was returned twice for good (a won chargeback is no exposure: it is not counted). It is worded as the
 * receipt is read, never stored: a receipt signed before reads the same entries and verifies as it did.
 */
export function deriveExposure(money: FinalMoney, onCharge: readonly ChargeRefund[] = []): Exposure | null {
  const out = (fact: RefundFact) => fact.status === 'succeeded' || fact.status === 'pending';
  const refund = money.refund ? (out(money.refund) ? money.refund : undefined) : money.refunds.find(out);
  if (!refund) return null;
  const chargebacks = money.disputes.filter((dispute) => isChargeback(dispute.status) && dispute.status !== 'won' && (refund.charge === null || dispute.charge === null || dispute.charge === refund.charge));
  const [first] = chargebacks;
  if (first === undefined) return null;
  const refundCents = refund.amount ?? 0;
  const chargebackCents = chargebacks.reduce((sum, dispute) => sum + (dispute.amount ?? 0), 0);
  const read = chargeRead(chargebacks, refundCents);
  const twice = read === null ? null : Math.max(0, read.refunded + chargebackCents - read.amount);
  const newer = read === null ? null : refundedAfter(refund, refund.charge ?? first.charge, onCharge);
  const cents = twice === null ? refundCents + chargebackCents : Math.min(refundCents, Math.max(0, twice - (newer ?? 0)));
  if (cents === 0 && read !== null) return null;
  // In the refund's own money: 2000 is $20.00 in usd and ¥2,000 in jpy, never "2000 cents" of either.
  const inCurrency = (amount: number) => moneyText(amount, refund.currency ?? null);
  const onThe = read === null ? '' : `on a charge of ${inCurrency(read.amount)} of which ${inCurrency(read.refunded)} was refunded, `;
  // A lost chargeback is final (an appeal is a status of its own, and open): once all are lost, nothing is left to win.
  const lost = chargebacks.every((dispute) => dispute.status === 'lost');
  const decided = chargebacks.length === 1 ? `the dispute ${first.id} was lost` : `the disputes ${chargebacks.map((dispute) => dispute.id).join(', ')} were lost`;
  const stands = lost ? `: ${decided}, so the merchant paid both` : ' unless the dispute is won';
  const said =
    read === null ? (lost ? `the merchant paid both: ${decided}` : 'the merchant is out both unless the dispute is won')
    : newer === null || twice === cents ? `${onThe}${inCurrency(cents)} of this refund was returned twice${stands}`
    : `${onThe}${inCurrency(twice ?? 0)} was returned twice in all and ${inCurrency(cents)} of it with this refund (the refunds on the charge share it, the newest first)${stands}`;
  return {
    cents,
    paymentTwiceCents: twice,
    newerCents: newer,
    refundCents,
    chargebackCents,
    chargeCents: read?.amount ?? null,
    refundedCents: read?.refunded ?? null,
    currency: refund.currency ?? null,
    refund: refund.id,
    charge: refund.charge,
    dispute: first.id,
    disputes: chargebacks.map((dispute) => dispute.id),
    statuses: chargebacks.map((dispute) => dispute.status),
    sentence: `Refund ${refund.id} (${inCurrency(refundCents)}) went out and the charge was then charged back (${inCurrency(chargebackCents)}): ${said}.`,
  };
}

/**
 * Compensation for the incident not in the credit's currency (`kind`): a credit note in another (its own), or in one
 * no fact recorded (null); or billing's tagged balance credits in another currency, netted there against billing's
 * debits tagged with the incident in it (`amount`, what they credit net; `creditNote`, the credits' ids,
 * comma-separated, as the credit target's ForeignNote names them before a send).
 */
export type ForeignNote = { creditNote: string; amount: number | null; currency: string | null; kind: 'credit note' | 'balance credit' };

/**
 * A customer compensated twice for one incident: this effect's credit landed and billing compensated the incident too,
 * with credit notes (`creditNotes`, every one) or tagged balance credits (`balanceCredits`, every one that counts, in
 * any currency); `notesCents` is all of theirs in the credit's currency, and `elsewhere` the notes in another currency,
 * or in one not recorded, and billing's net balance credits in another currency, each in its own (never added to
 * `notesCents`). `reversedCents`: what debits labelled with this effect took back of its credit already; `currency`:
 * the credit's, when its commit or a fact says it.
 */
export type SecondCompensation = { cents: number; ownCents: number | null; reversedCents: number; currency: string | null; notesCents: number; elsewhere: ForeignNote[]; creditNotes: string[]; balanceCredits: string[]; incident: string | null; sentence: string };

/**
 * The others' compensation of a SecondCompensation as words: `notesCents` in the credit's currency, then what is
 * `elsewhere` (notes and balance credits) summed per currency, each in its own (`$3.00 and 700 JPY`); an amount in one
 * currency is never added to one in another, and one whose currency no fact recorded to no other.
 */
export function compensationsText(second: Pick<SecondCompensation, 'notesCents' | 'currency' | 'elsewhere'>): string {
  const sums = new Map<string, number>();
  const unknown: string[] = [];
  for (const note of second.elsewhere) {
    if (note.amount === null) unknown.push(`an amount not recorded on ${note.creditNote}`);
    else if (note.currency === null) unknown.push(moneyText(note.amount, null));
    else sums.set(note.currency, (sums.get(note.currency) ?? 0) + note.amount);
  }
  const foreign = [...[...sums].map(([code, amount]) => moneyText(amount, code)), ...unknown];
  return [...(second.notesCents > 0 || foreign.length === 0 ? [moneyText(second.notesCents, second.currency)] : []), ...foreign].join(' and ');
}

/**
 * The second compensation a landed credit's facts show, or null. `cents` is the part paid twice: the smaller of what
 * is left of this credit (its amount less what labelled debits took back) and the others' compensations. Only a note
 * whose fact recorded the credit's currency is an amount in it: one in another currency (a jpy note beside a usd
 * credit), or in one no fact recorded, compensates the incident all the same, but is never weighed against the credit
 * (¥700 is not 700 cents; nothing is converted): with one, what is left of the credit is at stake whole. A voided note
 * compensates nothing, and one whose latest fact names another incident (billing re-tagged it) compensates another
 * incident: neither is counted. Billing's balance credits for the incident count net of billing's debits tagged with
 * it (a credit billing took back compensates nothing), never below nothing, per currency: Stripe keeps a balance per
 * currency, so a debit tagged with the incident in eur takes nothing back of billing's usd credit. Those in the
 * credit's currency add to `notesCents`; those in another (billing's ¥700 beside a usd credit: src/facts/apply.ts
 * records them with their currency) compensate the incident as a note in another currency does, named `elsewhere` in
 * their own and never weighed against the credit. What the credit target counts before the send
 * (incidentCompensation) is what counts here. A credit in a currency the customer is not billed in compensates
 * nothing on the customer's invoices: no second compensation (final money says why), nor does one its customer's
 * deletion wiped unused (wipedByDeletion). Re-credits labelled with this
 * effect and tagged with its incident count with billing's balance credits for what they give beyond the labelled
 * debits (labelledMoves): a copy of the credit (a replayed request) is a second credit for the incident, while one that
 * undoes a take-back gives back this credit, not another.
 */
export function deriveSecondCompensation(facts: MoneyFacts, answer: MoneyStatus, ownCents: number | null, incident: string | null, effectCurrency: string | null = null): SecondCompensation | null {
  // A credit taken back in full compensates nothing: the others' compensation is the only one left.
  const reversed = reversedCents(facts, ownCents);
  if (answer !== 'returned' || (ownCents !== null && reversed >= ownCents) || currencyMismatch(facts, ownCents) !== null || wipedByDeletion(facts, ownCents) !== null) return null;
  const forIncident = (fact: CreditNoteFact) => fact.incident === undefined || fact.incident === incident;
  const issued = [...facts.creditNotes.values()].filter((note) => note.status !== 'void' && forIncident(note));
  // The credit's currency as its facts say it, else as its chain's premise does (`effectCurrency`: a commit recorded
  // before results carried one), as the target and the facts worker read it.
  const currency = ownCurrency(facts) ?? effectCurrency;
  // A balance transaction recorded without a currency is in the credit's (src/facts/apply.ts records one only when it
  // is in another); each other currency's are netted on their own.
  const byCurrency = new Map<string | null, CreditNoteFact[]>();
  for (const fact of facts.otherCredits.values()) {
    if (!forIncident(fact)) continue;
    const code = fact.currency === undefined || fact.currency === null || fact.currency === currency ? null : fact.currency;
    byCurrency.set(code, [...(byCurrency.get(code) ?? []), fact]);
  }
  const net = (moves: readonly CreditNoteFact[]) => -moves.reduce((sum, move) => sum + (move.amount ?? 0), 0);
  const creditsAmong = (moves: readonly CreditNoteFact[]) => moves.filter((move) => (move.amount ?? 0) < 0).map((move) => move.id);
  const tagged = byCurrency.get(null) ?? [];
  const copies = labelledMoves(facts, incident);
  const balanceCents = Math.max(0, copies.again + net(tagged));
  const abroad = [...byCurrency].flatMap(([code, moves]) => (code === null || net(moves) <= 0 ? [] : [{ creditNote: creditsAmong(moves).join(', '), amount: net(moves), currency: code, kind: 'balance credit' as const, ids: creditsAmong(moves) }]));
  const balanceCredits = [...(balanceCents > 0 ? [...creditsAmong(tagged), ...(copies.again > 0 ? copies.tagged : [])] : []), ...abroad.flatMap((sum) => sum.ids)];
  if (issued.length === 0 && balanceCredits.length === 0) return null;
  const inCurrency = (note: CreditNoteFact) => currency !== null && note.currency === currency;
  const notesCents = issued.filter(inCurrency).reduce((sum, note) => sum + (note.amount ?? 0), 0) + balanceCents;
  const elsewhere: ForeignNote[] = [
    ...issued.filter((note) => !inCurrency(note)).map((note) => ({ creditNote: note.id, amount: note.amount, currency: note.currency ?? null, kind: 'credit note' as const })),
    ...abroad.map(({ creditNote, amount, currency: code, kind }) => ({ creditNote, amount, currency: code, kind })),
  ];
  const cents = ownCents === null ? notesCents : elsewhere.length > 0 ? ownCents - reversed : Math.min(ownCents - reversed, notesCents);
  const creditNotes = issued.map((note) => note.id);
  const what = incident === null ? 'the same incident' : `incident ${incident}`;
  const theirs = [creditNotes.length > 0 ? `credit note ${creditNotes.join(', ')}` : null, balanceCredits.length > 0 ? `balance credit ${balanceCredits.join(', ')}` : null].filter((part) => part !== null).join(' and ');
  return {
    cents,
    ownCents,
    reversedCents: reversed,
    currency,
    notesCents,
    elsewhere,
    creditNotes,
    balanceCredits,
    incident,
    sentence: `This effect's credit${ownCents === null ? '' : ` (${moneyText(ownCents, currency)})`} landed and ${theirs} (${compensationsText({ notesCents, currency, elsewhere })}) also compensates ${what}: the customer was compensated twice.`,
  };
}

/**
 * What became of the money after a send Stripe accepted, as sentences to follow the outcome's own: said only when it
 * is not simply "it went back" (a refund Stripe failed afterwards or has not finished, a credit taken back or never
 * used), and the exposure's when the payment was charged back too; "" otherwise. `committed`: the effect's outcome
 * says the send landed. Every view of an effect (the API's, the CLI's, a case's) says the same.
 */
export function moneyAfterSend(committed: boolean, kind: string | null, money: Pick<FinalMoney, 'status' | 'failureReason' | 'currencyMismatch' | 'customerDeleted' | 'balanceUnread'>, exposure: Pick<Exposure, 'sentence'> | null): string {
  const parts: string[] = [];
  if (committed && kind === 'credit') {
    // Each as its final money reads it, and naming an alert only where one is raised (alert-rules.ts alertsFor).
    if (money.balanceUnread !== undefined) parts.push("Whether the credit reached the customer cannot be told: the customer's balance moved and Stripe deleted the customer before the move was read; alert failed_after_landed asks a person to look.");
    else if (money.currencyMismatch !== undefined) parts.push('Then the credit turned out to be in another currency than the customer is billed in, so it takes nothing off their bills; alert failed_after_landed says what to do.');
    else if (money.customerDeleted !== undefined) parts.push('Then Stripe deleted the customer with the credit still unused, so it reaches no bill; alert failed_after_landed says what to do.');
    else if (money.status === 'not_returned') parts.push('Then a debit labelled with this effect took the credit back: the customer does not have it.');
  } else if (committed && money.status === 'not_returned') {
    parts.push(`Then Stripe failed the refund (${money.failureReason ?? 'no reason given'}): the money did not go back to the customer, and alert failed_after_landed says what to do.`);
  } else if (committed && money.status === 'pending') {
    parts.push('Stripe has not finished the refund yet (pending): the money is not back with the customer yet.');
  }
  if (exposure !== null) parts.push(exposure.sentence);
  return parts.map((part) => ` ${part}`).join('');
}
