// The credit target: a goodwill credit to a customer's balance (`POST /v1/customers/{id}/balance_transactions`
// with a negative amount), tier 1 (keyed by the effect id) and queryable (the transaction's metadata carries the
// effect id; the lookup reads the pages of the customer's balance transactions, from the effect's first dispatch on
// when it is told when that was: see `query`).
//
// Facts (premises):
// - `subscription_status`: the status of the customer's newest subscription, whatever its status (a canceled
//   one included), or null when the customer has none.
// - `incident_compensation`: cents the customer was already given for this effect's incident by others, in the
//   credit's currency: the `amount` of every issued (not void) credit note tagged with the incident in that currency,
//   plus what the `adjustment` balance
//   transactions tagged with it that are not this effect's credited, net: a credit (negative) counts, a debit
//   (positive) takes one back (billing's SLA credit issued in error and debited again compensates nothing), and debits
//   beyond the credits count as nothing, not as less than nothing (a debit does not undo a credit note; voiding it
//   does). Tagged means `metadata.incident` (what billing's SLA automation writes) or `metadata.interlock_incident`
//   (what this target writes) equals the incident. The adjustments are netted per currency, and only those in the
//   credit's currency (INTERLOCK_CREDIT_CURRENCY, which apply requires the customer to be billed in) are in the
//   premise: Stripe keeps a balance per currency, so billing's usd credit for the incident is not taken back by a debit
//   tagged with it in eur, which moves none of the usd balance (as final-money.ts nets a credit's labelled debits,
//   labelledMoves). Credit notes count whatever they paid out with (balance credit,
//   refund to the card, out of band), since each of them compensates the incident; their balance transactions (type
//   `credit_note`) are therefore not counted again. Compensation in another currency is not in the premise: a credit
//   note in another currency (the note's `currency`, its invoice's: a usd customer's jpy invoice), or tagged
//   adjustments in another currency that credit net (billing's ¥700 SLA credit in the jpy balance of a usd customer
//   with a jpy invoice, which Stripe applies to its next jpy invoice); amounts in two currencies are never added, nor
//   converted (¥700 is not 700 cents). It still compensates the incident, so apply refuses the credit on it all the
//   same, naming it in its own currency ("700 JPY"); the premise keeps its shape (a number), so a premise recorded
//   before reads alike. An effect none of whose sends can have landed
//   (ReadContext.neverSent: the gate's read before a first dispatch) has no credit of its own: a tagged adjustment
//   carrying its id then is someone else's (made by hand, the id copied from the API's answer), and counts.
//   Not the customer's balance: a renewal consuming the balance moves it without compensating anything (the
//   billing_credit seed, scenarios.md §3).
// - `currency`: the currency this target gives credits in (INTERLOCK_CREDIT_CURRENCY, lowercase), the unit of the
//   effect's amount: 5000 is $50.00 in usd and ¥5,000 in jpy. The target's own, not Stripe's: it costs no call, and it
//   reads the same whatever Stripe answers. Recorded so that every alert and inbox item about the credit states its
//   money in it, before anything lands too (src/core/effect-currency.ts); a credit decided under one currency and
//   dispatched by a worker set to another is refused on it (REFUSED:stale_premise), since its amount would be
//   another sum of money.
// - `customer_currency`: the currency a credit to the customer lands in: the one it is billed in (customerCurrency:
//   `customer.currency`, else its newest balance transaction's), or, for a customer billed in none yet, the credit's
//   own (a first balance transaction sets the customer's currency to its own). Read with `incident_compensation` (the
//   same reads, no extra call). A case's facts carry it so that a credit apply is certain to refuse (currency_mismatch,
//   below) is declined when the case is decided, naming it (src/decider/stopping-fact.ts), not proposed and refused
//   with the case id spent. Added after the other facts: a proposal recorded without it never reads it (the gate reads
//   the names a proposal recorded), and apply checks the customer's currency itself whatever the premises hold.
// A customer Stripe does not know (404) reads as every fact null, but for `currency`.
//
// The lookup answers null (nothing landed) for a customer Stripe never knew, and throws lookup_blind for a deleted
// one: Stripe answers a deleted customer's retrieve with its `deleted: true` stub for good, but 404s the list of its
// balance transactions, so whether this effect's credit landed before the deletion can no longer be read (see `query`).
//
// Told when the effect was first dispatched (ReadContext.dispatchedAt, recovery's lookups), the lookup reads the
// customer, then lists only the balance transactions created since then less DISPATCH_SKEW_MS (`created[gte]`): the
// credit cannot be older than its dispatch, and a customer billing posts usage to every hour gathers tens of thousands
// of transactions, more than one lookup's time can page through (it would fail on every pass, and the crashed credit
// stay open for good). The dispatch's time is Redis's clock and `created` Stripe's, so the margin is a day: see
// DISPATCH_SKEW_MS. A customer on a test clock has its objects created at the clock's time, not now, so its list is
// read whole. And it does not answer null while the customer has an unlabelled lookalike: a credit of the effect's
// amount and currency made since the dispatch (less the margin) whose interlock_effect_id is missing or names another
// id (someone cleared it in the Dashboard, or all the metadata, or wrote a ticket number over it), unless it says it is
// someone else's: billing's SLA credit tagged `metadata.incident` (as incidentCompensation counts it), or an
// interlock_incident naming another incident. Keys added (a note) do not rule it out: the Dashboard edits metadata
// freely. It may be this effect's credit, so "nothing
// landed" would let recovery refuse the effect and give its cents back, or send a second credit once Stripe forgot the
// key: the lookup throws lookup_blind, and the gate settles the effect AMBIGUOUS (its cents held, a person asked to
// check it). Such a credit that keeps this effect's interlock_incident is in incident_compensation all the same (it may
// be another effect's credit for the incident, and a first dispatch must be refused on it), so recovery's re-read
// finds the premise changed; but recovery refuses on a changed premise only once its lookup answered nothing landed,
// and the lookup answers lookup_blind: the effect settles AMBIGUOUS, never REFUSED as compensated by others (the
// refusal stands only for a dispatch none of whose requests left, ReadContext.neverSent, where nothing can be its own).
// The effect's currency is the one it was decided in (ReadContext.currency, its dispatch's `currency` premise), not
// this target's own: a worker set to jpy recovering a credit a usd worker sent during a rolling change of
// INTERLOCK_CREDIT_CURRENCY looks for a usd lookalike, and names the credit's amount as $50.00, not 5000 JPY. A chain
// that records no currency premise has a lookalike of the amount in any currency.
// On a test clock the lookalike has no time bound, and cannot have a sound one: the clock does not run but
// jumps when advanced, and an advance between the dispatch and the lookup (the way a renewal after a crash is tested)
// puts its frozen_time any distance past the credit's `created`, so no bound taken from it (its frozen_time less the
// time since the dispatch) is sure to hold the effect's own credit. There an unlabelled credit of the amount made
// before the dispatch keeps the effect's crashed credits of that amount AMBIGUOUS; test clocks exist in test mode only.
//
// Whatever the window misses, a send that is not a first one (SendContext.neverSent absent: an earlier send of the
// effect may have landed) never makes a second credit: when the customer read right before it (the premise read kept
// for it, or its own read, which lists every balance transaction) holds the credit the lookup would take for the
// effect's own (findOwn: carrying its id, with its amount), apply answers that credit as Stripe's idempotent replay
// would (`replayed: true`), and the gate commits what landed. Checked before the refusals: a credit that landed
// stands, whatever the customer's currency or compensation says now.
//
// That read is whole, whatever the customer's age: billing may have compensated the incident at any time. It gets the
// send's time less a third of the send timeout, left for the POST (POST_SHARE), so a read that runs long ends as
// "nothing was sent" (SendFenced), never as a send past its deadline, whose outcome the gate must take for unknown. A
// customer with more balance transactions than one read can list (usage billed every hour for years) is read over
// several sends, each going on where the last stopped (BalanceHistory), and kept for an hour, topped up with what
// was made since; its sends until then are fenced, each saying how far the read got, which the send_unanswered alert
// quotes if it takes long.
//
// A credit for an incident others already compensated (in the credit's currency or in another) is refused before the
// send, in apply, and not through a
// premise: the gate compares premises for equality, so an `incident_compensation` read at decision time that was
// already above zero (a second request for the incident, a case decided after billing's SLA credit note) would
// compare equal and pass, and the customer would be compensated twice for one incident. apply checks the
// compensation the gate's premise read for this effect found right before the dispatch (no extra call; a read made
// for anything else, a decision's, is never used), or reads it itself when there is no such read. This effect's own
// credit is not counted, so a resend after a landed send passes; the send of a first dispatch (SendContext.neverSent)
// has none, and counts every credit carrying its id, as its premise read did.
//
// A credit in another currency than the customer's is refused before the send, in apply, too. The customer's
// currency is `customer.currency`, the one it is billed in, which its first subscription, invoice or balance
// transaction sets: a credit in another currency is refused by Stripe after the dispatch (once the approval's cap and
// use are held for it), or kept in a balance of its own that never reduces the customer's invoices, and either way
// the customer gets nothing off its bill. A subscriber billed in eur with no balance transaction yet has eur, so the
// customer is read with the compensation's reads (the premise read of `incident_compensation`, or apply's own), and
// its balance transactions' currency stands in only where Stripe has none. A customer with neither yet takes the
// credit's currency as its own. The check can only be made before the send: billing may set the customer's currency
// (its first invoice) while the credit is at Stripe, which takes the credit into a balance of its own. The post-send
// facts record the credit's currency and the customer's, and the receipt then answers not_returned
// (`currency_mismatch`) with an alert (src/facts/apply.ts, src/core/final-money.ts).
//
// Stripe calls: no single request returns a customer's currency, subscriptions, credit notes and balance
// transactions, so a premise check asking for both facts makes four reads. They go out together (one round trip of
// latency); a check of only `subscription_status` makes one, of only `incident_compensation` three.
import { performance } from 'node:perf_hooks';
import type Stripe from 'stripe';
import type { CreditEffect, Effect } from '../core/effects.js';
import { InterlockError } from '../core/errors.js';
import { STRIPE_DEDUP_WINDOW_MS } from '../core/timing.js';
import type { Json, JsonObject } from '../core/json.js';
import { Rejected, type ReadContext, type SendContext, type Target } from '../core/target.js';
import { DEFAULT_SEND_TIMEOUT_MS, MAX_PAGE_SIZE, listAll, readBudget, readCall, sendCall, type ReadBudget } from './calls.js';
import { closeRequestsOutOfTime, type StripeClient } from './client.js';
import { ReadBeforeSendFailed, StripeUnavailable } from './errors.js';
import { moneyText } from '../core/money-text.js';
import { EFFECT_ID_KEY, INCIDENT_KEY, effectMetadata, findOwn, labelWords } from './metadata.js';
import { balanceCreditSummary, wasReplayed } from './summaries.js';

export const CREDIT_FACTS = ['subscription_status', 'incident_compensation', 'currency', 'customer_currency'] as const;
export type CreditFact = (typeof CREDIT_FACTS)[number];

export type CreditTargetOptions = {
  name?: string;
  /** Every send ends by this long after it starts (INTERLOCK_SEND_TIMEOUT_MS); the gate bounds its reads by it too. */
  sendTimeoutMs?: number;
  /** The currency of the credit (Stripe requires one; it must be the customer's). Default `usd`. */
  currency?: string;
  /** Items per page of a list (Stripe allows 100); tests page with fewer. */
  pageSize?: number;
};

export function creditOf(effect: Effect): CreditEffect {
  if (effect.kind !== 'credit') throw new InterlockError('invalid_effect', `the Stripe credit target moves customer credits, not ${effect.kind} effects`);
  return effect;
}

function missing(error: unknown): boolean {
  return error instanceof Rejected && error.details.code === 'resource_missing';
}

/**
 * How far before the effect's first dispatch (Redis's clock) its lookup reads and takes a lookalike for possibly its
 * own: the skew Stripe's clock (`created`) may have behind Redis's. A day, not minutes: a Redis host without NTP (a VM,
 * Docker Desktop's after a sleep) drifts minutes or hours ahead, and a landed credit the window misses reads as
 * nothing landed. Still bounded: it cuts a customer's years of balance transactions to a day's (an hourly meter's
 * two dozen), a page or two. Not from elapsed time (Stripe's Date header less the time since the dispatch): the
 * lookup is not told Redis's now, and the worker's own clock would be a third one.
 */
export const DISPATCH_SKEW_MS = 24 * 60 * 60 * 1000;

function tagged(metadata: Stripe.Metadata | null | undefined, incident: string): boolean {
  return metadata?.['incident'] === incident || metadata?.[INCIDENT_KEY] === incident;
}

/**
 * Compensation for the incident in another currency than the credit's, in that currency's minor unit: an issued credit
 * note (`credit note`), or what billing's tagged balance adjustments in that currency credit net (`balance credit`, `id`
 * the tagged credits among them, comma-separated).
 */
export type ForeignNote = { id: string; amount: number; currency: string; kind: 'credit note' | 'balance credit' };

/**
 * What others gave for `incident` (see the header; `cents` is `incident_compensation`), from the customer's credit notes and balance transactions: `cents`
 * in `currency` (the credit's, lowercase), and `elsewhere`, what compensates it in another currency, each in its own
 * (never added to `cents`): the issued notes tagged with it, and per currency the tagged adjustments that credit net
 * (a debit there takes back only a credit there; a net debit counts as nothing).
 * The effect's own credit of `amount` cents is the transaction the lookup would take (findOwn: the oldest carrying its
 * id with its amount); any other one carrying its id (a credit of another amount made by hand with the id copied,
 * a second one) is someone else's compensation, and counts. `neverSent` (ReadContext.neverSent): no send of the
 * effect can have landed, so none of them is its own.
 */
export function incidentCompensation(notes: readonly Stripe.CreditNote[], transactions: readonly Stripe.CustomerBalanceTransaction[], incident: string, effectId: string, amount: number, currency: string, neverSent = false): { cents: number; elsewhere: ForeignNote[] } {
  const issued = notes.filter((note) => note.status === 'issued' && tagged(note.metadata, incident));
  const inCurrency = (note: Stripe.CreditNote) => note.currency.toLowerCase() === currency;
  const byNotes = issued.filter(inCurrency).reduce((sum, note) => sum + note.amount, 0);
  const elsewhere: ForeignNote[] = issued.filter((note) => !inCurrency(note)).map((note) => ({ id: note.id, amount: note.amount, currency: note.currency.toLowerCase(), kind: 'credit note' }));
  const own = neverSent ? null : (findOwn(transactions, effectId, (transaction) => transaction.amount === -amount)?.own ?? null);
  // Netted per currency: Stripe keeps a balance per currency, and a debit moves only the balance it is in.
  const adjusted = new Map<string, { net: number; credits: string[] }>();
  for (const transaction of transactions) {
    if (transaction.type !== 'adjustment' || transaction === own || !tagged(transaction.metadata, incident)) continue;
    const code = transaction.currency.toLowerCase();
    const sum = adjusted.get(code) ?? { net: 0, credits: [] };
    adjusted.set(code, { net: sum.net - transaction.amount, credits: transaction.amount < 0 ? [...sum.credits, transaction.id] : sum.credits });
  }
  for (const [code, sum] of adjusted) {
    if (code !== currency && sum.net > 0) elsewhere.push({ id: sum.credits.join(', '), amount: sum.net, currency: code, kind: 'balance credit' });
  }
  return { cents: byNotes + Math.max(0, adjusted.get(currency)?.net ?? 0), elsewhere };
}

/**
 * The newest credit that may be the effect's own with its label removed or changed: an adjustment of `amount` cents
 * credited in `currency` (the one the effect was decided in, ReadContext.currency; null when its chain does not say,
 * and then in any currency: a wrong "nothing landed" gives cents back, AMBIGUOUS only asks a person), created at or
 * after `since` (Stripe seconds; null: at any time, for a customer on a test clock, whose objects carry the clock's
 * time), whatever its interlock_effect_id says: missing, or naming another id than the effect's (the Dashboard and the
 * API edit metadata freely: a person may clear the id, or overwrite it with a ticket number). It is ruled out only by what says the credit was someone else's: billing's `metadata.incident` (its
 * SLA credit, which incidentCompensation counts as others' compensation; not when the effect's own metadata, `own`,
 * wrote that key with that value) or an interlock_incident naming another incident (which the send writes as the
 * effect's own, and no effect's metadata can name). Keys added do not rule it out (a person tidying up adds a note).
 * Unlike a refund (refund-target.ts unlabelledRefund), a credit is not ruled out by a well-formed effect id either
 * (labelledEffect, the one label namesNoEffect does not leave possibly ours): every credit send writes its
 * interlock_incident, so another effect's credit for another incident is told apart by that, and no second effect's
 * credit for this incident is normal, as a second refund of one amount on a payment is: apply refuses a credit for an
 * incident already compensated (incident_already_compensated), so a credit for this incident carrying another
 * effect's id may as well be this effect's with that id pasted over it.
 * Asked only once findOwn found none: a credit of `amount` carrying the effect's own id is its own, never a lookalike.
 * Null when there is none.
 */
export function unlabelledLookalike(transactions: readonly Stripe.CustomerBalanceTransaction[], amount: number, incident: string, currency: string | null, since: number | null, own: Readonly<Record<string, string>> = {}): Stripe.CustomerBalanceTransaction | null {
  const labelled = (value: string | undefined) => value !== undefined && value !== '';
  const billings = (metadata: Stripe.Metadata) => labelled(metadata['incident']) && own['incident'] !== metadata['incident'];
  return (
    transactions.find((transaction) => {
      const metadata = transaction.metadata ?? {};
      return (
        transaction.type === 'adjustment' &&
        transaction.amount === -amount &&
        (currency === null || transaction.currency.toLowerCase() === currency) &&
        (since === null || transaction.created >= since) &&
        !billings(metadata) &&
        (!labelled(metadata[INCIDENT_KEY]) || metadata[INCIDENT_KEY] === incident)
      );
    }) ?? null
  );
}

/**
 * The compensation `given` in the credit's `currency` and what compensates it `elsewhere`, as one sentence's words:
 * `$3.00 and 700 JPY (credit note cn_1; balance credit cbtxn_1)`. Each currency summed on its own; none converted.
 */
function compensationText(given: number, currency: string, elsewhere: readonly ForeignNote[]): string {
  const byCurrency = new Map<string, { amount: number; items: ForeignNote[] }>();
  for (const item of elsewhere) {
    const sum = byCurrency.get(item.currency) ?? { amount: 0, items: [] };
    byCurrency.set(item.currency, { amount: sum.amount + item.amount, items: [...sum.items, item] });
  }
  const named = (items: readonly ForeignNote[]) =>
    (['credit note', 'balance credit'] as const)
      .map((kind) => ({ kind, ids: items.filter((item) => item.kind === kind).map((item) => item.id) }))
      .filter(({ ids }) => ids.length > 0)
      .map(({ kind, ids }) => `${kind} ${ids.join(', ')}`)
      .join('; ');
  const foreign = [...byCurrency].map(([code, sum]) => `${moneyText(sum.amount, code)} (${named(sum.items)})`);
  return [...(given > 0 || foreign.length === 0 ? [moneyText(given, currency)] : []), ...foreign].join(' and ');
}

/**
 * The currency a customer is billed in: `customer.currency`, or, where Stripe has none, that of its balance
 * transactions (the newest first); null when it has neither yet.
 */
export function customerCurrency(customer: Stripe.Customer | Stripe.DeletedCustomer, transactions: readonly Stripe.CustomerBalanceTransaction[]): string | null {
  const billed = 'deleted' in customer && customer.deleted === true ? null : (customer as Stripe.Customer).currency;
  return (billed ?? transactions[0]?.currency ?? null)?.toLowerCase() ?? null;
}

/**
 * What the pre-send check needs of a customer: cents others gave for the incident in the credit's currency, their notes
 * for it in another (incidentCompensation), the currency it is billed in, and `own`, the credit the lookup would take
 * for the effect's landed send (findOwn, over every balance transaction), or null (always null when read as for a
 * first send, ReadContext.neverSent, which none of the effect's can have landed before).
 */
type CustomerStanding = { cents: number; elsewhere: ForeignNote[]; currency: string | null; own: Stripe.CustomerBalanceTransaction | null };

/** How long the `incident_compensation` of a premise read stands in for a fresh read in apply's pre-send check. */
const COMPENSATION_FRESH_MS = 5_000;
/** Reads remembered at most; a read that never reaches apply (a stale premise, a refused proposal) ages out. */
const COMPENSATION_MEMORY = 10_000;

/**
 * The share of the send timeout apply's pre-send read of the customer leaves for the POST: its read ends that long
 * before the send deadline. A read that runs long then ends as "nothing was sent" (SendFenced), never as a send that
 * ran into its deadline, which the gate must take for an unknown outcome (a request may have left) and resend only
 * after a back-off of up to an hour.
 */
const POST_SHARE = 1 / 3;
/**
 * How long the balance history of a customer too busy to list within one read (see BalanceHistory) is kept, from when
 * its read began: topped up with what is new on every read meanwhile, read anew after. Metadata edited meanwhile on a
 * transaction it read already (a tag added to an old adjustment by hand) is seen only then.
 */
const HISTORY_KEPT_MS = 60 * 60 * 1000;
/** Busy customers' histories kept at most. */
const HISTORIES_KEPT = 1_000;
/** A balance transaction the pre-send check weighs: one naming an incident (incidentCompensation) or carrying an effect id (findOwn). */
function weighed(transaction: Stripe.CustomerBalanceTransaction): boolean {
  const metadata = transaction.metadata ?? {};
  return [EFFECT_ID_KEY, INCIDENT_KEY, 'incident'].some((key) => (metadata[key] ?? '') !== '');
}

/**
 * What the pre-send check needs of a customer's balance transactions, all of them, however old: billing may have
 * compensated the incident at any time, and a resend's own credit may lie outside the lookup's window (see the
 * header). `newest` (whose currency stands in for the customer's where Stripe has none) and, newest first, the
 * `weighed` ones; the others (a metered customer's hourly usage) are only counted (`read`). `olderAfter`: the id the
 * read of older ones goes on after (`starting_after`), null once it reached the oldest. `begun`: performance.now()
 * when the read began.
 */
type BalanceHistory = { newest: Stripe.CustomerBalanceTransaction | null; weighed: Stripe.CustomerBalanceTransaction[]; read: number; oldest: number | null; olderAfter: string | null; begun: number };

export function createCreditTarget(client: StripeClient, options: CreditTargetOptions = {}): Target {
  const currency = (options.currency ?? 'usd').toLowerCase();
  const sendTimeoutMs = options.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS;
  const postMs = Math.ceil(sendTimeoutMs * POST_SHARE);
  const paging = options.pageSize === undefined ? {} : { pageSize: options.pageSize };
  /**
   * (effect id, customer, incident) → the incident compensation and balance currency the last premise read of that
   * effect found for them, and when. Keyed by what the read depended on: a read made for another payload under the
   * effect id (a retry naming another incident or customer, refused as a conflict after its facts were read ahead)
   * says nothing about the recorded credit's incident. And by the dispatch attempt the gate's premise read named
   * (ReadContext.attempt): an attempt refused before its send (its approval out of room) leaves a read that another
   * attempt's send, whose premises read no compensation, must not take for its own. And by whether it was read as for
   * a first dispatch (neverSent): a read ahead made so, that its attempt did not use (the chain held an earlier
   * dispatch), counts the effect's own credit as someone else's.
   */
  const compensations = new Map<string, CustomerStanding & { at: number }>();
  const readOf = (effectId: string, credit: CreditEffect, attempt: string, neverSent: boolean) => `${effectId} ${credit.customer} ${credit.incident} ${attempt}${neverSent ? ' never-sent' : ''}`;

  function remember(read: string, standing: CustomerStanding): void {
    compensations.delete(read);
    compensations.set(read, { ...standing, at: performance.now() });
    for (const [id, read] of compensations) {
      if (compensations.size <= COMPENSATION_MEMORY && performance.now() - read.at <= COMPENSATION_FRESH_MS) break;
      compensations.delete(id);
    }
  }

  /** The customer's balance transactions, newest first; only those created at or after `since` (Stripe seconds) when given. */
  const balanceTransactions = (customer: string, budget: ReadBudget, since?: number) =>
    listAll(
      client,
      budget,
      `GET /v1/customers/${customer}/balance_transactions${since === undefined ? '' : `?created[gte]=${since}`}`,
      (sdk, cursor, o) => sdk.customers.listBalanceTransactions(customer, since === undefined ? cursor : { ...cursor, created: { gte: since } }, o),
      paging,
    );
  const pageSize = options.pageSize ?? MAX_PAGE_SIZE;
  const transactionsPage = (customer: string, budget: ReadBudget, after: string | null) =>
    readCall(client, budget, `GET /v1/customers/${customer}/balance_transactions`, (sdk, o) => sdk.customers.listBalanceTransactions(customer, after === null ? { limit: pageSize } : { limit: pageSize, starting_after: after }, o));
  /**
   * customer → the balance history of a customer whose transactions did not fit one read: the next read goes on where
   * it stopped (its pages are older than any new one, and a transaction is never deleted), so a customer with tens of
   * thousands of them (usage billed every hour) is read whole over a few sends, each refused before the network
   * (SendFenced) until then, not never. A customer read whole in one read is not kept: every check reads it anew.
   */
  const histories = new Map<string, BalanceHistory>();

  /**
   * The customer's balance transactions Stripe lists before `newest` (made after it), newest first: the pages before
   * it, walked up (`ending_before`) until none is left. By position, not by `created`, so transactions made in one
   * second (an import) are not all read again.
   */
  async function transactionsAfter(customer: string, budget: ReadBudget, newest: string): Promise<Stripe.CustomerBalanceTransaction[]> {
    const pages: Stripe.CustomerBalanceTransaction[][] = [];
    let before: string | null = newest;
    while (before !== null) {
      const cursor: string = before;
      const page = await readCall(client, budget, `GET /v1/customers/${customer}/balance_transactions?ending_before=${cursor}`, (sdk, o) => sdk.customers.listBalanceTransactions(customer, { limit: pageSize, ending_before: cursor }, o));
      pages.unshift(page.data);
      before = page.has_more ? (page.data[0]?.id ?? null) : null;
    }
    return pages.flat();
  }

  /** `history` with `fresh`, the transactions made since its newest, newest first. */
  const toppedUp = (history: BalanceHistory, fresh: readonly Stripe.CustomerBalanceTransaction[]): BalanceHistory => ({
    ...history,
    newest: fresh[0] ?? history.newest,
    weighed: [...fresh.filter(weighed), ...history.weighed],
    read: history.read + fresh.length,
  });

  /**
   * Every balance transaction of the customer the pre-send check weighs (BalanceHistory), read within `budget`: on
   * from where an earlier read of a busy customer stopped, topped up with what was made since. Throws when the budget
   * ends first, saying how far it got; the next read goes on from there.
   */
  async function balanceHistory(customer: string, budget: ReadBudget): Promise<BalanceHistory> {
    // Left kept while this read runs: another read of the customer meanwhile (a send of another of its credits, a
    // premise read) goes on from it too, not from the first page, and keep() keeps whichever got further.
    const earlier = histories.get(customer);
    const resumed = earlier !== undefined && current(earlier) ? earlier : null;
    let history: BalanceHistory | null = resumed;
    try {
      if (history !== null && history.newest !== null) {
        history = toppedUp(history, await transactionsAfter(customer, budget, history.newest.id));
      }
      if (history === null) {
        const page = await transactionsPage(customer, budget, null);
        history = { newest: page.data[0] ?? null, weighed: page.data.filter(weighed), read: page.data.length, oldest: page.data.at(-1)?.created ?? null, olderAfter: page.has_more ? (page.data.at(-1)?.id ?? null) : null, begun: performance.now() };
      }
      while (history.olderAfter !== null) {
        const page = await transactionsPage(customer, budget, history.olderAfter);
        history = { ...history, weighed: [...history.weighed, ...page.data.filter(weighed)], read: history.read + page.data.length, oldest: page.data.at(-1)?.created ?? history.oldest, olderAfter: page.has_more ? (page.data.at(-1)?.id ?? null) : null };
      }
    } catch (error) {
      if (history === null || error instanceof Rejected) throw error;
      keep(customer, history);
      // Only an outage that passes (the read's time ran out, a 429, a 5xx) is "more than one read could list": a
      // refused key (StripeMisconfigured), an answer not Stripe's or a bug is thrown as it is, so the gate answers it
      // as that (target_misconfigured ends the job at once), not as a read to go on with later.
      if (!(error instanceof StripeUnavailable) || !error.passing) throw error;
      const back = history.oldest === null ? '' : `, back to ${new Date(history.oldest * 1000).toISOString()}`;
      throw new StripeUnavailable(
        `Customer ${customer} has more balance transactions than one read could list (${error.message}): ${history.read} read so far${back}; the next read goes on from there`,
        { stripeStatus: error.stripeStatus, stripeCode: error.stripeCode, requestId: error.requestId, retryAfterMs: error.retryAfterMs, rateLimited: error.rateLimited, outcomeUnknown: false },
        { cause: error },
      );
    }
    if (resumed !== null) keep(customer, history);
    return history;
  }

  const current = (history: BalanceHistory) => performance.now() - history.begun <= HISTORY_KEPT_MS;
  /** Whether read `a` got further than `b`: it reached the oldest transaction and `b` did not, or, alike, read more. */
  const wentFurther = (a: BalanceHistory, b: BalanceHistory) => ((a.olderAfter === null) !== (b.olderAfter === null) ? a.olderAfter === null : a.read > b.read);

  /**
   * Keeps `history` as the customer's, unless the one kept got further (reached the oldest transaction when this did
   * not, or read more): two reads of one customer at once each go on from what was kept, and the one that stopped
   * last must not put back less than the other read, or overlapping sends would never read a busy customer whole.
   */
  function keep(customer: string, history: BalanceHistory): void {
    const kept = histories.get(customer);
    if (kept !== undefined && current(kept) && wentFurther(kept, history)) return;
    histories.delete(customer);
    histories.set(customer, history);
    for (const [id, old] of histories) {
      if (histories.size <= HISTORIES_KEPT && current(old)) break;
      histories.delete(id);
    }
  }

  const creditNotes = (customer: string, budget: ReadBudget) => listAll(client, budget, `GET /v1/credit_notes?customer=${customer}`, (sdk, cursor, o) => sdk.creditNotes.list({ customer, ...cursor }, o), paging);
  const customerOf = (customer: string, budget: ReadBudget) => readCall(client, budget, `GET /v1/customers/${customer}`, (sdk, o) => sdk.customers.retrieve(customer, {}, o));
  /** The customer, its credit notes and its balance history, read together: what the pre-send check weighs. */
  async function readStanding(credit: CreditEffect, effectId: string, budget: ReadBudget, neverSent: boolean): Promise<CustomerStanding> {
    const [customer, notes, history] = await Promise.all([customerOf(credit.customer, budget), creditNotes(credit.customer, budget), balanceHistory(credit.customer, budget)]);
    const transactions = history.weighed;
    const own = neverSent ? null : (findOwn(transactions, effectId, (transaction) => transaction.amount === -credit.amount)?.own ?? null);
    return { ...incidentCompensation(notes, transactions, credit.incident, effectId, credit.amount, currency, neverSent), currency: customerCurrency(customer, history.newest === null ? [] : [history.newest]), own };
  }
  /** The customer for the pre-send check: the premise read just made, or a read now within the send's time. */
  async function customerStanding(effectId: string, credit: CreditEffect, context: SendContext): Promise<CustomerStanding> {
    const neverSent = context.neverSent === true;
    const key = context.attempt === undefined ? null : readOf(effectId, credit, context.attempt, neverSent);
    const read = key === null ? undefined : compensations.get(key);
    if (key !== null) compensations.delete(key);
    if (read !== undefined && performance.now() - read.at <= COMPENSATION_FRESH_MS) return read;
    const budget: ReadBudget = { timeLeftMs: () => context.timeLeftMs() - postMs };
    try {
      return await readStanding(credit, effectId, budget, neverSent);
    } catch (error) {
      // Stripe refused a read (a GET), not the credit: said as a refusal before the send (no status), which the
      // effect's sentence then tells apart from Stripe refusing a credit it was sent (src/core/outcomes.ts).
      if (error instanceof Rejected) {
        const gone = missing(error) ? ': Stripe does not know the customer, or it was deleted' : '';
        throw new Rejected(`The check before the send could not read customer ${credit.customer} (${error.message})${gone}; the credit was not sent`, { ...error.details, status: null });
      }
      // Nothing was sent, and the read's error goes with it: a 429's Retry-After slows the gate's queue down, and a
      // refused key (StripeMisconfigured) is answered as the configuration error it is (src/gate/submit.ts).
      throw new ReadBeforeSendFailed(`the check that incident ${credit.incident} was not compensated yet could not read the customer (${error instanceof Error ? error.message : String(error)})`, error);
    }
  }

  /**
   * The customer as Stripe answers it now (a deleted one as its `deleted: true` stub), or null when Stripe has no
   * record of it at all, so that no credit can exist on it: Stripe refuses a balance transaction for an id it does not
   * know, and never 404s a customer it deleted. Throws when the retrieve fails otherwise.
   */
  async function customerIfKnown(customer: string, budget: ReadBudget): Promise<Stripe.Customer | Stripe.DeletedCustomer | null> {
    try {
      return await customerOf(customer, budget);
    } catch (error) {
      if (missing(error)) return null;
      throw error;
    }
  }

  /**
   * Why the lookup cannot tell whether the credit of `amount` cents, in `decided` (the currency it was decided in),
   * landed on a customer whose balance transactions Stripe will not list: `known`, deleted (lookup_blind, for good), or
   * there and 404ing the list all the same (lookup_failed, for now).
   */
  function unlisted(customer: string, known: Stripe.Customer | Stripe.DeletedCustomer, effectId: string, amount: number, decided: string, cause?: unknown): InterlockError {
    const deleted = 'deleted' in known && known.deleted === true;
    const why = deleted ? 'was deleted at Stripe, which no longer lists its balance transactions' : "exists at Stripe, but the list of its balance transactions answered 404 No such customer";
    return new InterlockError(
      deleted ? 'lookup_blind' : 'lookup_failed',
      `Customer ${customer} ${why}, so whether this effect's credit of ${moneyText(amount, decided)} landed cannot be read; check the customer's credit balance history in the Dashboard (metadata ${EFFECT_ID_KEY} = ${effectId})`,
      cause === undefined ? undefined : { cause },
    );
  }

  const newestSubscription = async (customer: string, budget: ReadBudget): Promise<string | null> => {
    const page = await readCall(client, budget, `GET /v1/subscriptions?customer=${customer}`, (sdk, o) => sdk.subscriptions.list({ customer, status: 'all', limit: 1 }, o));
    return page.data[0]?.status ?? null;
  };

  return {
    name: options.name ?? 'stripe-customer-credits',
    tier: 1,
    queryable: true,
    dedupWindowMs: STRIPE_DEDUP_WINDOW_MS,
    // Stripe answers a repeated Idempotency-Key with the stored first answer, and the pre-send checks refuse before
    // the network: a refusal of a send means none of its requests landed.
    refusalProvesNothingLanded: true,
    sendTimeoutMs,
    kinds: ['credit'],
    facts: CREDIT_FACTS,
    // The sends the gate aborted have no time left: their requests still open are closed, on this client's agent.
    abortSends() {
      closeRequestsOutOfTime(client);
    },

    async apply(effectId, effect, context) {
      const credit = creditOf(effect);
      const { cents: given, elsewhere, currency: held, own } = await customerStanding(effectId, credit, context);
      // An earlier send landed, and the lookup's window missed it (see the header): it is the answer, no second credit.
      if (own !== null && context.neverSent !== true) return { ...balanceCreditSummary(own), replayed: true };
      if (held !== null && held !== currency) {
        throw new Rejected(`Customer ${credit.customer} is billed in ${held}, and credits are given in ${currency} (INTERLOCK_CREDIT_CURRENCY); Stripe keeps one credit balance per currency and applies it only to invoices in that currency, so a credit in ${currency} would not reach this customer's invoices; it was not sent`, { code: 'currency_mismatch', status: null });
      }
      // A note in another currency compensates the incident as well: it stops the credit, stated in its own currency.
      if (given > 0 || elsewhere.length > 0) {
        throw new Rejected(`Incident ${credit.incident} was already compensated ${compensationText(given, currency, elsewhere)} for customer ${credit.customer} (credit notes or balance credits tagged with it); a second credit for one incident was not sent`, { code: 'incident_already_compensated', status: null });
      }
      const params: Stripe.CustomerCreateBalanceTransactionParams = {
        amount: -credit.amount,
        currency,
        metadata: effectMetadata(effectId, context, credit.metadata, { [INCIDENT_KEY]: credit.incident }),
        ...(credit.description === undefined ? {} : { description: credit.description }),
      };
      const created = await sendCall(client, context, `POST /v1/customers/${credit.customer}/balance_transactions`, effectId, (sdk, o) => sdk.customers.createBalanceTransaction(credit.customer, params, o));
      const summary: JsonObject = balanceCreditSummary(created);
      if (wasReplayed(created)) summary.replayed = true;
      return summary;
    },

    async query(effectId, effect, context: ReadContext) {
      const { customer, amount, incident, metadata } = creditOf(effect);
      const budget = readBudget(context.timeoutMs);
      // The effect's money is in the currency it was decided in, which a worker recovering it during a rolling change of
      // INTERLOCK_CREDIT_CURRENCY does not give credits in (ReadContext.currency): its credit landed in that one. Said
      // in this target's own where the gate did not say, as currencyOfEffectOrCredit does.
      const told = context.currency?.toLowerCase() ?? null;
      const decided = told ?? currency;
      // Told the first dispatch: read from it on (created[gte], Stripe seconds), and watch for a lookalike made since
      // (`since` null: the customer is on a test clock, whose created times say nothing of when, so read it all).
      let window: { since: number | null } | null = null;
      if (context.dispatchedAt !== undefined) {
        const known = await customerIfKnown(customer, budget);
        if (known === null) return null;
        if ('deleted' in known && known.deleted === true) throw unlisted(customer, known, effectId, amount, decided);
        const clocked = (known as Stripe.Customer).test_clock !== null && (known as Stripe.Customer).test_clock !== undefined;
        window = { since: clocked ? null : Math.floor((context.dispatchedAt - DISPATCH_SKEW_MS) / 1000) };
      }
      let transactions: Stripe.CustomerBalanceTransaction[];
      try {
        transactions = await balanceTransactions(customer, budget, window?.since ?? undefined);
      } catch (error) {
        if (!missing(error)) throw error;
        // Null only for an id Stripe never knew. It must stay possible: the gate looks up every refused send, and a
        // credit refused because its customer does not exist would otherwise never settle; the premise read does not
        // prove the customer existed at dispatch (it reads an unknown customer as every fact null).
        const known = await customerIfKnown(customer, budget);
        if (known === null) return null;
        // Thrown, not null: a null lets recovery refuse the effect and give its cents back to the approval while the
        // credit may sit on the deleted customer. For a deleted customer the lookup will never see again (lookup_blind),
        // and the gate settles the effect AMBIGUOUS (its cents held, a person asked); otherwise it is a lookup that
        // failed for now (lookup_failed), asked again at the next pass.
        throw unlisted(customer, known, effectId, amount, decided, error);
      }
      const found = findOwn(transactions, effectId, (transaction) => transaction.amount === -amount);
      if (found === null) {
        // A chain that records no currency for the effect: a lookalike in any currency may be its credit.
        const lookalike = window === null ? null : unlabelledLookalike(transactions, amount, incident, told, window.since, metadata);
        if (lookalike === null || window === null) return null;
        // Not null (see the header): it may be this credit with its label removed or changed, and only a person can tell.
        const made = window.since === null ? "on the customer's test clock" : `at ${new Date(lookalike.created * 1000).toISOString()}, after this effect was first dispatched`;
        throw new InterlockError(
          'lookup_blind',
          `Customer ${customer} has no balance transaction carrying ${EFFECT_ID_KEY} = ${effectId} for this effect's credit of ${moneyText(amount, decided)}, but ${lookalike.id}, a credit of ${moneyText(amount, lookalike.currency.toLowerCase())} created ${made}, ${labelWords(lookalike.metadata)}: it may be this effect's credit with its metadata edited, so whether this credit landed cannot be read. Check ${lookalike.id} in the customer's credit balance history in the Dashboard (who made it, and whether it is the credit for incident ${incident}); credit the customer by hand only if it is not`,
        );
      }
      const summary: JsonObject = balanceCreditSummary(found.own);
      if (found.others.length > 0) summary.others_with_effect_id = found.others;
      return summary;
    },

    async readFacts(effectId, effect, names, context: ReadContext) {
      const credit = creditOf(effect);
      const { customer } = credit;
      const budget = readBudget(context.timeoutMs);
      const wantsStatus = names.includes('subscription_status');
      // The customer's currency comes with the compensation's reads (readStanding), asked for either.
      const wantsStanding = names.includes('incident_compensation') || names.includes('customer_currency');
      const neverSent = context.neverSent === true;
      let read: { status: string | null; compensation: number | null; billedIn: string | null } | null;
      try {
        const [status, standing] = await Promise.all([
          wantsStatus ? newestSubscription(customer, budget) : null,
          wantsStanding ? readStanding(credit, effectId, budget, neverSent) : null,
        ]);
        // Kept for apply only when the gate read it right before the send: a decision's read may be any age.
        if (standing !== null && context.premiseCheck === true && context.attempt !== undefined) remember(readOf(effectId, credit, context.attempt, neverSent), standing);
        // A customer billed in no currency yet takes the credit's as its own (see the header).
        read = { status, compensation: standing?.cents ?? null, billedIn: standing === null ? null : (standing.currency ?? currency) };
      } catch (error) {
        if (!missing(error)) throw error;
        read = null;
      }
      const facts: JsonObject = {};
      for (const name of names) {
        let value: Json = null;
        if (read !== null && name === 'subscription_status') value = read.status;
        if (read !== null && name === 'incident_compensation') value = read.compensation;
        if (read !== null && name === 'customer_currency') value = read.billedIn;
        if (name === 'currency') value = currency;
        facts[name] = value;
      }
      return facts;
    },
  };
}
