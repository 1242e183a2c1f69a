// The refund target: refunds of a PaymentIntent through Stripe, tier 1 (Stripe dedupes on the Idempotency-Key,
// which is the effect id) and queryable (the refund's metadata carries the effect id).
//
// Facts (premises), all from one read of the payment on the happy path:
// - `chargebacks`: sorted ids of the disputes on the charge that are chargebacks, i.e. not inquiries (an inquiry
//   is a `warning_*` dispute; one that escalated keeps its id and counts from then on). `charge.disputed` is true
//   from the first dispute on and stays true, so a charge that was never disputed needs no dispute read; a disputed
//   one needs a second read, since Stripe's charge does not list its disputes.
// - `refunded_by_others`: cents of the charge's refunds that are not failed or canceled and not this effect's (its own
//   is the one the lookup would take: the oldest carrying its id with its amount; a label alone is a lead, not proof).
//   An effect none of whose sends can have landed (ReadContext.neverSent: the gate's read before a first dispatch) has
//   no refund of its own: one carrying its id then is someone else's (made by hand, the id copied from the API's
//   answer), and counts, so a premise decided before it is stale and the gate does not send a second refund.
// - `refundable`: cents this effect may still refund: the captured amount less `refunded_by_others` (0 for a
//   failed charge or a payment without a charge). This effect's own refund is left out, so it does not move when the
//   effect itself lands (with neverSent, there is none); a resend after a landed send is answered with that refund
//   before the amount is weighed (below).
//   0 for a payment only authorised (its charge not captured), a canceled one among them: Stripe refunds no part of
//   a PaymentIntent's uncaptured charge (it answers that the PaymentIntent must be canceled to release it), so a
//   refund of it, whole or partial, is refused before the send, saying so, never by Stripe after the dispatch.
// - `charge_status`: the status of the PaymentIntent's latest charge (`succeeded`, `pending`, `failed`), or null.
// - `currency`: the PaymentIntent's currency (lowercase ISO code), the unit of the effect's amount: 5000 is $50.00 in
//   usd and ¥5,000 in jpy. It never changes, so a premise of it read at the decision holds at every send; it is
//   recorded so that every alert and inbox item about the refund states its money in it, before anything lands too
//   (src/core/effect-currency.ts). Chains recorded before it existed carry none (their currency reads as unknown).
// A PaymentIntent Stripe does not know (404) reads as every fact null.
//
// The lookup takes the effect's refund by its label (findOwn). Told the effect's first dispatch (ReadContext.dispatchedAt,
// recovery's lookups), it does not answer null (nothing landed) while the payment holds an unlabelled lookalike: a
// refund of the effect's amount made since the dispatch, less DISPATCH_SKEW_MS for the skew between Redis's clock and
// Stripe's, whose interlock_effect_id names no effect (missing, empty, or not a well-formed effect id: a ticket number
// written over it), whatever other keys it carries (a note added): unlabelledRefund. The Dashboard edits metadata
// freely, so such a refund may be this effect's own with its label cleared or overwritten: past Stripe's 24 h key
// window "nothing landed" would resend it as a second refund, and before it would let a failed re-check refuse it and
// give its cents back. The lookup throws lookup_blind naming it, and the gate settles the effect AMBIGUOUS for a person
// to check. A refund carrying a well-formed effect id is that effect's: two Interlock refunds of one amount on one
// payment are normal (two cases refunded alike), so another effect's is no lookalike.
//
// A refund larger than what remains is refused before the send, in apply, and not through a premise: the gate
// compares premises for equality, so a `refundable` read at decision time that was already too small would compare
// equal and pass. apply checks the amount against the `refundable` of the facts read for this effect right before
// the dispatch (the gate reads them there, and again before a resend), so the check costs no extra call; when there
// is no such read (a caller that sends without reading the premises, or premises without refund facts) it reads
// the payment itself, with the send's SendContext.neverSent as the premise read had it. Stripe still refuses an
// over-refund that a concurrent refund makes possible in between.
//
// A send that is not a first one (SendContext.neverSent absent: an earlier send of the effect may have landed) never
// makes a second refund, whether or not Stripe still remembers the key: when the payment read right before it (the
// premise read kept for it, or apply's own read, which lists every refund of the charge) holds the refund the lookup
// would take for the effect's own (findOwn: carrying its id, with its amount, whatever its status: a failed or
// canceled one is still what the effect's send made, as the lookup answers), apply answers that refund as Stripe's
// idempotent replay would (`replayed: true`) and sends nothing, and the gate commits what landed. Recovery resends
// inside the key window without a lookup (src/core/decisions.ts planRecovery), and the window is measured on Redis's
// clock: a Redis whose clock is behind Stripe's (a step back, a failover to a replica with a lagging clock) resends a
// day-old dispatch under a key Stripe has forgotten, which would refund the payment a second time. Checked before the
// refusals: a refund that landed stands, whatever remains refundable now. A refund carrying the effect's id with
// another amount is not its own (someone else's, counted in `refunded_by_others`), and the send goes on. A first
// send (neverSent) has no refund of its own, so its path and its calls are unchanged.
import { performance } from 'node:perf_hooks';
import type Stripe from 'stripe';
import type { Effect, RefundEffect } from '../core/effects.js';
import { InterlockError } from '../core/errors.js';
import { STRIPE_DEDUP_WINDOW_MS } from '../core/timing.js';
import type { Json, JsonObject } from '../core/json.js';
import { moneyText } from '../core/money-text.js';
import { Rejected, type ReadContext, type SendContext, type Target } from '../core/target.js';
import { DEFAULT_SEND_TIMEOUT_MS, listAll, readBudget, readCall, sendCall, type ReadBudget } from './calls.js';
import { closeRequestsOutOfTime, type StripeClient } from './client.js';
import { DISPATCH_SKEW_MS } from './credit-target.js';
import { ReadBeforeSendFailed } from './errors.js';
import { EFFECT_ID_KEY, effectMetadata, findOwn, labelWords, namesNoEffect } from './metadata.js';
import { isChargeback, refundSummary, wasReplayed, type RefundSummary } from './summaries.js';

export const REFUND_FACTS = ['chargebacks', 'refunded_by_others', 'refundable', 'charge_status', 'currency'] as const;
export type RefundFact = (typeof REFUND_FACTS)[number];

export type RefundTargetOptions = {
  name?: string;
  /** Every send ends by this long after it starts (INTERLOCK_SEND_TIMEOUT_MS); the gate bounds its reads by it too. */
  sendTimeoutMs?: number;
  /** Items per page of a list (Stripe allows 100); tests page with fewer. */
  pageSize?: number;
};

/** What Stripe says about a payment right now; null when Stripe has no such PaymentIntent. */
export type PaymentStanding = {
  /** The PaymentIntent's currency, lowercase (null when the answer named none). */
  currency: string | null;
  charge: Stripe.Charge | null;
  /** Every refund of the charge, newest first. */
  refunds: Stripe.Refund[];
  /** Every dispute of the charge, newest first; null when they were not read. */
  disputes: Stripe.Dispute[] | null;
} | null;

export function refundOf(effect: Effect): RefundEffect {
  if (effect.kind !== 'refund') throw new InterlockError('invalid_effect', `the Stripe refund target moves refunds, not ${effect.kind} effects`);
  return effect;
}

/** A refund that is not failed or canceled: its money is out or on its way. */
function counts(refund: Stripe.Refund): boolean {
  return refund.status !== 'failed' && refund.status !== 'canceled';
}

function missing(error: unknown): boolean {
  return error instanceof Rejected && error.details.code === 'resource_missing';
}

/** `own`: the effect's own refund (see refundFigures), null when there is none or the read was as for a first send. */
export type RefundFigures = { chargebacks: string[]; refundedByOthers: number; refundable: number; chargeStatus: string | null; currency: string | null; uncaptured: boolean; own: Stripe.Refund | null };

/**
 * The facts of a standing for one effect of `amount` cents (see the header for their meaning). The effect's own refund
 * is the one the lookup would take (findOwn: the oldest carrying its id with its amount); any other refund is someone
 * else's money out, whatever its metadata says (a label is a lead, not proof: one made by hand, or of another amount).
 * `neverSent` (ReadContext.neverSent): no send of the effect can have landed, so it has no refund of its own at all.
 */
export function refundFigures(standing: NonNullable<PaymentStanding>, effectId: string, amount: number, neverSent = false): RefundFigures {
  const { charge, refunds, disputes } = standing;
  const own = neverSent ? null : (findOwn(refunds, effectId, (refund) => refund.amount === amount)?.own ?? null);
  const refundedByOthers = refunds.filter((refund) => counts(refund) && refund !== own).reduce((sum, refund) => sum + refund.amount, 0);
  // Only captured money comes back: a charge only authorised, or whose authorisation was canceled, refunds nothing.
  const uncaptured = charge !== null && charge.status !== 'failed' && !charge.captured;
  let refundable = 0;
  if (charge !== null && charge.status !== 'failed' && charge.captured) refundable = Math.max(0, charge.amount_captured - refundedByOthers);
  const chargebacks = (disputes ?? []).filter(isChargeback).map((dispute) => dispute.id).sort();
  return { chargebacks, refundedByOthers, refundable, chargeStatus: charge?.status ?? null, currency: standing.currency, uncaptured, own };
}

/**
 * The newest refund that may be the effect's own with its label removed or changed: of `amount` cents, created at or
 * after `since` (Stripe seconds), whose interlock_effect_id names no effect (namesNoEffect: missing, empty, or not a
 * well-formed effect id, such as a ticket number written over it), whatever other keys it carries (a person tidying up
 * adds a note). A refund carrying a well-formed effect id is the refund of the effect it names (another effect's: asked
 * only once findOwn found none carrying this effect's own with its amount), never a lookalike: another Interlock refund
 * of the same amount on the payment is normal. Its status does not matter, as for findOwn: the effect's own refund may
 * have failed since. Null when there is none.
 */
export function unlabelledRefund(refunds: readonly Stripe.Refund[], amount: number, since: number): Stripe.Refund | null {
  return refunds.find((refund) => refund.amount === amount && refund.created >= since && namesNoEffect(refund.metadata)) ?? null;
}

/**
 * Reads a payment: the PaymentIntent with its latest charge and that charge's refunds expanded (one request while
 * the charge has at most 10 refunds; more pages after that), and its disputes when asked and the charge was ever
 * disputed.
 */
export async function readPaymentStanding(client: StripeClient, paymentIntent: string, budget: ReadBudget, options: { disputes: boolean; pageSize?: number }): Promise<PaymentStanding> {
  let intent: Stripe.PaymentIntent;
  try {
    intent = await readCall(client, budget, `GET /v1/payment_intents/${paymentIntent}`, (sdk, o) => sdk.paymentIntents.retrieve(paymentIntent, { expand: ['latest_charge.refunds'] }, o));
  } catch (error) {
    if (missing(error)) return null;
    throw error;
  }
  // Null only for an answer that is no PaymentIntent as Stripe writes one (a proxy's, a hand-made one): it says no currency.
  const currency = typeof intent.currency === 'string' ? intent.currency.toLowerCase() : null;
  let charge: Stripe.Charge | null = null;
  const latest = intent.latest_charge;
  if (typeof latest === 'string') {
    charge = await readCall(client, budget, `GET /v1/charges/${latest}`, (sdk, o) => sdk.charges.retrieve(latest, { expand: ['refunds'] }, o));
  } else if (latest !== null && latest !== undefined) {
    charge = latest;
  }
  if (charge === null) return { currency, charge: null, refunds: [], disputes: options.disputes ? [] : null };
  const chargeId = charge.id;
  const page = { ...(options.pageSize === undefined ? {} : { pageSize: options.pageSize }) };
  const refunds = await listAll(client, budget, `GET /v1/refunds?charge=${chargeId}`, (sdk, cursor, o) => sdk.refunds.list({ charge: chargeId, ...cursor }, o), {
    ...page,
    ...(charge.refunds ? { first: charge.refunds } : {}),
  });
  let disputes: Stripe.Dispute[] | null = null;
  if (options.disputes) {
    disputes = charge.disputed ? await listAll(client, budget, `GET /v1/disputes?charge=${chargeId}`, (sdk, cursor, o) => sdk.disputes.list({ charge: chargeId, ...cursor }, o), page) : [];
  }
  return { currency, charge, refunds, disputes };
}

const FACT_OF: Record<RefundFact, (figures: RefundFigures) => Json> = {
  chargebacks: (figures) => figures.chargebacks,
  refunded_by_others: (figures) => figures.refundedByOthers,
  refundable: (figures) => figures.refundable,
  charge_status: (figures) => figures.chargeStatus,
  currency: (figures) => figures.currency,
};

function isRefundFact(name: string): name is RefundFact {
  return (REFUND_FACTS as readonly string[]).includes(name);
}

/**
 * What apply's pre-send check weighs: the cents still refundable, in the payment's currency (null when Stripe named
 * none), whether that is because the payment is only authorised (its refusal says so), and the effect's own refund
 * the read found (a resend's answer; null when there is none, always for a read as for a first send).
 */
type Remainder = { refundable: number; currency: string | null; uncaptured: boolean; own: RefundSummary | null };

function remainderOf(figures: RefundFigures): Remainder {
  return { refundable: figures.refundable, currency: figures.currency, uncaptured: figures.uncaptured, own: figures.own === null ? null : refundSummary(figures.own) };
}

/** How long the `refundable` of a premise read stands in for a fresh read in apply's pre-send check. */
const REMAINDER_FRESH_MS = 5_000;
/** Reads remembered at most; a read that never reaches apply (a stale premise, a refused proposal) ages out. */
const REMAINDER_MEMORY = 10_000;

export function createRefundTarget(client: StripeClient, options: RefundTargetOptions = {}): Target {
  const sendTimeoutMs = options.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS;
  const pageSize = options.pageSize;
  const paging = pageSize === undefined ? {} : { pageSize };
  /**
   * (effect id, payment) → the refundable cents the last premise read of that effect on that payment found, in the
   * payment's currency, and when. Keyed by the payment too: a read made for another payload under the effect id (a
   * retry with another payment, refused as a conflict after its facts were read ahead) says nothing about the recorded
   * one's payment. And by the dispatch attempt the gate's premise read named (ReadContext.attempt): only that attempt's
   * send uses it. And by whether it was read as for a first dispatch (neverSent): a read ahead made so, that its
   * attempt did not use (the chain held an earlier dispatch), counts the effect's own refund as someone else's.
   */
  const remainders = new Map<string, Remainder & { at: number }>();
  const readOf = (effectId: string, refund: RefundEffect, attempt: string, neverSent: boolean) => `${effectId} ${refund.paymentIntent} ${attempt}${neverSent ? ' never-sent' : ''}`;

  function remember(read: string, remainder: Remainder): void {
    remainders.delete(read);
    remainders.set(read, { ...remainder, at: performance.now() });
    for (const [id, read] of remainders) {
      if (remainders.size <= REMAINDER_MEMORY && performance.now() - read.at <= REMAINDER_FRESH_MS) break;
      remainders.delete(id);
    }
  }

  /** The refundable cents for the pre-send check: the premise read just made, or a read now within the send's time. */
  async function remainder(effectId: string, effect: RefundEffect, context: SendContext): Promise<Remainder> {
    const neverSent = context.neverSent === true;
    const key = context.attempt === undefined ? null : readOf(effectId, effect, context.attempt, neverSent);
    const read = key === null ? undefined : remainders.get(key);
    if (key !== null) remainders.delete(key);
    if (read !== undefined && performance.now() - read.at <= REMAINDER_FRESH_MS) return read;
    let standing: PaymentStanding;
    try {
      standing = await readPaymentStanding(client, effect.paymentIntent, { timeLeftMs: () => context.timeLeftMs() }, { disputes: false, ...paging });
    } catch (error) {
      if (error instanceof Rejected) throw error;
      // Nothing was sent, and the read's error goes with it: a 429's Retry-After slows the gate's queue down, and a
      // refused key (StripeMisconfigured) is answered as the configuration error it is (src/gate/submit.ts).
      throw new ReadBeforeSendFailed(`the check that the refund still fits could not read the payment (${error instanceof Error ? error.message : String(error)})`, error);
    }
    if (standing === null) throw new Rejected(`No such payment_intent: '${effect.paymentIntent}'; the refund was not sent`, { code: 'resource_missing', status: 404 });
    return remainderOf(refundFigures(standing, effectId, effect.amount, neverSent));
  }

  return {
    name: options.name ?? 'stripe-refunds',
    tier: 1,
    queryable: true,
    dedupWindowMs: STRIPE_DEDUP_WINDOW_MS,
    // Stripe answers a repeated Idempotency-Key with the stored first answer, and the pre-send checks refuse before
    // the network: a refusal of a send means none of its requests landed.
    refusalProvesNothingLanded: true,
    sendTimeoutMs,
    kinds: ['refund'],
    facts: REFUND_FACTS,
    // What another refund on the payment changes once it lands: a refund decided on these goes out alone on it.
    movedBySends: ['refunded_by_others', 'refundable'],
    // The sends the gate aborted have no time left: their requests still open are closed, on this client's agent.
    abortSends() {
      closeRequestsOutOfTime(client);
    },

    async apply(effectId, effect, context) {
      const refund = refundOf(effect);
      const { refundable, currency, uncaptured, own } = await remainder(effectId, refund, context);
      // An earlier send landed (see the header): it is the answer, whatever Stripe remembers of the key; no second refund.
      if (own !== null && context.neverSent !== true) return { ...own, replayed: true };
      if (uncaptured) {
        throw new Rejected(`${refund.paymentIntent} is authorised but not captured (or its authorisation was canceled): Stripe refunds no part of an uncaptured payment, which is released by canceling the PaymentIntent, so nothing is refundable; the refund of ${moneyText(refund.amount, currency)} was not sent`, { code: 'amount_exceeds_refundable', status: null });
      }
      if (refund.amount > refundable) {
        throw new Rejected(`A refund of ${moneyText(refund.amount, currency)} is more than the ${moneyText(refundable, currency)} still refundable on ${refund.paymentIntent}; it was not sent`, { code: 'amount_exceeds_refundable', status: null });
      }
      const params: Stripe.RefundCreateParams = {
        payment_intent: refund.paymentIntent,
        amount: refund.amount,
        metadata: effectMetadata(effectId, context, refund.metadata),
        ...(refund.reason === undefined ? {} : { reason: refund.reason }),
      };
      const created = await sendCall(client, context, 'POST /v1/refunds', effectId, (sdk, o) => sdk.refunds.create(params, o));
      const summary: JsonObject = refundSummary(created);
      if (wasReplayed(created)) summary.replayed = true;
      return summary;
    },

    async query(effectId, effect, context: ReadContext) {
      const { paymentIntent, amount } = refundOf(effect);
      let refunds: Stripe.Refund[];
      try {
        refunds = await listAll(client, readBudget(context.timeoutMs), `GET /v1/refunds?payment_intent=${paymentIntent}`, (sdk, cursor, o) => sdk.refunds.list({ payment_intent: paymentIntent, ...cursor }, o), paging);
      } catch (error) {
        if (missing(error)) return null;
        throw error;
      }
      const found = findOwn(refunds, effectId, (item) => item.amount === amount);
      if (found === null) {
        if (context.dispatchedAt === undefined) return null;
        const lookalike = unlabelledRefund(refunds, amount, Math.floor((context.dispatchedAt - DISPATCH_SKEW_MS) / 1000));
        if (lookalike === null) return null;
        // Not null (see the header): it may be this refund with its label removed or changed, and only a person can tell.
        const money = moneyText(amount, lookalike.currency);
        throw new InterlockError(
          'lookup_blind',
          `Payment ${paymentIntent} has no refund carrying ${EFFECT_ID_KEY} = ${effectId} for this effect's refund of ${money}, but ${lookalike.id}, a refund of ${money} created at ${new Date(lookalike.created * 1000).toISOString()}, after this effect was first dispatched, ${labelWords(lookalike.metadata)}: it may be this effect's refund with its metadata edited, so whether this refund landed cannot be read. Check ${lookalike.id} on the payment in the Dashboard (who made it, and whether it is the refund this request asked for); refund the customer by hand only if it is not`,
        );
      }
      const summary: JsonObject = refundSummary(found.own);
      if (found.others.length > 0) summary.others_with_effect_id = found.others;
      return summary;
    },

    async readFacts(effectId, effect, names, context: ReadContext) {
      const refund = refundOf(effect);
      const { paymentIntent } = refund;
      const facts: JsonObject = {};
      if (names.length === 0) return facts;
      const standing = await readPaymentStanding(client, paymentIntent, readBudget(context.timeoutMs), { disputes: names.includes('chargebacks'), ...paging });
      const neverSent = context.neverSent === true;
      const figures = standing === null ? null : refundFigures(standing, effectId, refund.amount, neverSent);
      // Kept for apply only when the gate read it for a dispatch attempt (its premise check): that attempt's send uses it.
      if (figures !== null && context.premiseCheck === true && context.attempt !== undefined) remember(readOf(effectId, refund, context.attempt, neverSent), remainderOf(figures));
      for (const name of names) facts[name] = figures !== null && isRefundFact(name) ? FACT_OF[name](figures) : null;
      return facts;
    },
  };
}
