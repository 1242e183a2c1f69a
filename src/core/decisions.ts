// The gate's decisions as pure functions over one effect's entries. The Redis scripts enforce the same rules
// atomically; these functions are what the gate, recovery and verify() reason with.
import { payloadHash } from './effect-id.js';
import type { EffectKind } from './effects.js';
import type { Entry, EntryOf, Checks, PremiseChange } from './entries.js';
import { canonicalJson, type Json, type JsonObject } from './json.js';
import { currencyCode, moneyText } from './money-text.js';

export type Blocker = 'in_flight' | 'committed' | 'ambiguous' | 'conflicting_payload' | 'target_error' | 'reapproved';

export function closesDispatch(entry: Entry): boolean {
  return entry.kind === 'COMMITTED' || entry.kind === 'AMBIGUOUS' || (entry.kind === 'REFUSED' && entry.resolves);
}

/** The DISPATCHED whose outcome is not yet settled, or null. Only COMMITTED, AMBIGUOUS or a resolving REFUSED close one. */
export function openDispatch(entries: readonly Entry[]): EntryOf<'DISPATCHED'> | null {
  let open: EntryOf<'DISPATCHED'> | null = null;
  for (const entry of entries) {
    if (entry.kind === 'DISPATCHED') open = entry;
    else if (closesDispatch(entry)) open = null;
  }
  return open;
}

export function firstProposal(entries: readonly Entry[]): EntryOf<'PROPOSED'> | null {
  return (entries.find((entry) => entry.kind === 'PROPOSED') as EntryOf<'PROPOSED'> | undefined) ?? null;
}

export function committedEntry(entries: readonly Entry[]): EntryOf<'COMMITTED'> | null {
  return (entries.find((entry) => entry.kind === 'COMMITTED') as EntryOf<'COMMITTED'> | undefined) ?? null;
}

/** The payload a dispatch sends: the one the first proposal bound (a version 1 DISPATCHED also repeats it). */
export function dispatchedEffect(entries: readonly Entry[], dispatched: EntryOf<'DISPATCHED'>): JsonObject | null {
  return dispatched.effect ?? firstProposal(entries)?.effect ?? null;
}

/** The approval snapshot a dispatch was checked against: its own, or that of the AUTHORIZED of its batch. */
export function dispatchedApproval(entries: readonly Entry[], dispatched: EntryOf<'DISPATCHED'>): Checks['approval'] {
  if (dispatched.checks.approval !== null) return dispatched.checks.approval;
  const index = entries.indexOf(dispatched);
  for (let i = index - 1; i >= 0; i -= 1) {
    const entry = entries[i];
    if (entry?.kind === 'AUTHORIZED' && entry.approval.id === dispatched.approval) return entry.approval;
  }
  return null;
}

/** A fenced-out sender's answer that the effect landed: the money moved, whatever the journal settled on. */
export function lateLanding(entries: readonly Entry[]): EntryOf<'LATE_RESULT'> | null {
  return (entries.find((entry) => entry.kind === 'LATE_RESULT' && entry.outcome === 'landed') as EntryOf<'LATE_RESULT'> | undefined) ?? null;
}

/** A refusal of another payload under this effect id: evidence of the attempt, never the effect's own outcome. */
export function isForeignRefusal(entry: Entry): boolean {
  return entry.kind === 'REFUSED' && entry.code === 'REFUSED:conflicting_payload';
}

/** First reason a new dispatch of `effect` must not happen, in the order the dispatch script checks them. */
export function dispatchBlocker(entries: readonly Entry[], effect: JsonObject): Blocker | null {
  if (openDispatch(entries)) return 'in_flight';
  if (entries.some((entry) => entry.kind === 'COMMITTED') || lateLanding(entries)) return 'committed';
  if (entries.some((entry) => entry.kind === 'AMBIGUOUS')) return 'ambiguous';
  const first = firstProposal(entries);
  if (first && payloadHash(first.effect) !== payloadHash(effect)) return 'conflicting_payload';
  // The target's definite no is final for this effect id: sending it again could land what it refused.
  if (entries.some((entry) => entry.kind === 'REFUSED' && entry.resolves && entry.code === 'REFUSED:target_error')) return 'target_error';
  // A person re-approved the refusal as a new request (core/inbox.ts): this effect id must never send as well, or the
  // money would move twice. A submit that read the chain before the RESOLVED entry loses its compare-and-set on the
  // chain head and reads it again, so no dispatch slips past.
  if (entries.some((entry) => entry.kind === 'RESOLVED' && entry.action === 'reapprove')) return 'reapproved';
  return null;
}

/**
 * The premises a dispatch is judged against: those of the first proposal under the same approval. A retry under
 * one approval is held to the facts the approver saw; a new approval is a new decision and brings its own facts.
 * Only a proposal of the bound payload counts (issue 6, item 3): a refused proposal of another payload can never
 * supply the facts a dispatch is judged against.
 */
export function premisesDecidedOn(entries: readonly Entry[], approvalId: string | null, incoming: JsonObject): JsonObject {
  const first = firstProposal(entries);
  const bound = first ? payloadHash(first.effect) : null;
  for (const entry of entries) {
    if (entry.kind === 'PROPOSED' && entry.approval === approvalId && payloadHash(entry.effect) === bound) return entry.premises;
  }
  return incoming;
}

export type PremiseReport = { violations: string[]; changes: PremiseChange[] };

/**
 * Why a changed fact refuses the effect, where the change alone does not say it: a credit's `currency` premise is no
 * fact about the customer but the currency the credit target gives credits in (INTERLOCK_CREDIT_CURRENCY, read from the
 * worker's setting), so its change means the worker sending the credit is set to another currency than the one the
 * credit was decided and approved in, and the same amount would be another sum of money.
 */
function changeExplained(kind: EffectKind | null, field: string, was: Json, now: Json): string {
  if (kind !== 'credit' || field !== 'currency') return '';
  // Only two currency codes as Stripe writes them say that much: anything else (JPY beside jpy included) was a caller's
  // own statement, which the change already quotes.
  const code = (value: Json): value is string => typeof value === 'string' && currencyCode(value) === value;
  if (!code(was) || !code(now)) return '';
  return `, since the worker that would send this credit gives credits in ${now} (INTERLOCK_CREDIT_CURRENCY), not in ${was}, the currency it was decided and approved in: the same amount is another sum of money there. Decide the credit again in ${now} under a new request id, or give credits in ${was} again if the setting changed by mistake`;
}

/**
 * The premises (src/stripe) that are amounts of money in the smallest unit of the `currency` premise beside them: a
 * refund's `refunded_by_others` and `refundable` (cents of the payment's currency), a credit's `incident_compensation`
 * (cents of the credit's currency). No other premise is money: `chargebacks` are ids, the statuses and currencies words.
 */
const MONEY_PREMISES: Readonly<Record<EffectKind, readonly string[]>> = {
  refund: ['refunded_by_others', 'refundable'],
  credit: ['incident_compensation'],
};

/** Whether `field` is an amount of money for an effect of `kind`; of either kind when it is not known (the names differ). */
export function isMoneyPremise(kind: EffectKind | null, field: string): boolean {
  return kind === null ? Object.values(MONEY_PREMISES).some((fields) => fields.includes(field)) : MONEY_PREMISES[kind].includes(field);
}

/**
 * The currency the money premises of a comparison are in: the `currency` premise the decided facts and the facts read
 * now name, when both name the same one or only one names one. Null when they name two (a credit decided in usd and
 * read by a worker set to jpy: each amount is in its own, and neither can be written as the other) or none (a proposal
 * made without its currency premise), so those changes keep their bare numbers rather than a currency guessed for them.
 */
export function premisesCurrency(decided: Json | undefined, now: Json | undefined): string | null {
  const was = currencyCode(decided);
  const is = currencyCode(now);
  if (was !== null && is !== null) return was === is ? was : null;
  return was ?? is;
}

/**
 * A premise's value as a change states it: its JSON, and for an amount of money (isMoneyPremise) in a currency known
 * (premisesCurrency) the money beside it, `7500 (75.00 EUR)`, so that a reader takes 10000 cents for 100.00 EUR, not
 * €10,000. The number stays: it is what the facts and the structured `changes` record. Anything that is not a whole
 * number (null for a payment Stripe does not know) is its JSON alone.
 */
export function premiseValueText(kind: EffectKind | null, field: string, value: Json, currency: string | null): string {
  const text = canonicalJson(value);
  if (currency === null || typeof value !== 'number' || !Number.isSafeInteger(value) || !isMoneyPremise(kind, field)) return text;
  return `${text} (${moneyText(value, currency)})`;
}

/**
 * Compares the facts a decision stood on with the facts read now. A fact the target could not find reads as
 * null. Pure, so the submit path, recovery and tests judge premises alike. `kind`: the effect's, for the changes whose
 * sentence depends on it (changeExplained); null where it is not known.
 */
export function comparePremises(decided: JsonObject, current: JsonObject, kind: EffectKind | null = null): PremiseReport {
  const violations: string[] = [];
  const changes: PremiseChange[] = [];
  const currency = premisesCurrency(Object.hasOwn(decided, 'currency') ? (decided.currency as Json) : undefined, Object.hasOwn(current, 'currency') ? (current.currency as Json) : undefined);
  for (const field of Object.keys(decided)) {
    const was = decided[field] as Json;
    const now: Json = Object.hasOwn(current, field) ? (current[field] as Json) : null;
    const before = canonicalJson(was);
    const after = canonicalJson(now);
    if (before !== after) {
      violations.push(`${field}: was ${premiseValueText(kind, field, was, currency)}, now ${premiseValueText(kind, field, now, currency)}${changeExplained(kind, field, was, now)}`);
      changes.push({ field, was, now });
    }
  }
  return { violations, changes };
}

export function checksPassed(checks: Checks): boolean {
  return checks.approvalLive && checks.approvalProblems.length === 0 && checks.violations.length === 0;
}

/** Why a re-check failed, approval first: a dead approval makes the premises moot. */
export function recheckFailure(checks: Checks): 'lease' | 'stale_premise' | null {
  if (!checks.approvalLive || checks.approvalProblems.length > 0) return 'lease';
  if (checks.violations.length > 0) return 'stale_premise';
  return null;
}

export type Tier = 1 | 2 | 3;

export type RecoveryTiming = {
  tier: Tier;
  queryable: boolean;
  now: number;
  dispatchedAt: number;
  sendDeadline: number;
  /** When the claim's last holder was proven gone (heartbeat missing, or another boot nonce), on the Redis clock. */
  deathProvenAt: number | null;
  dedupWindowMs: number;
  dedupMarginMs: number;
  settleMarginMs: number;
  /**
   * How many requests of this dispatch (its send and its resends) ended with no definite answer from the target (a
   * 5xx, a timeout, a dropped connection), and when the last of them did, on the Redis clock. A crash leaves no such
   * answer behind: absent or 0 means none came.
   */
  unknownAnswers?: number;
  lastUnknownAt?: number | null;
  /**
   * No request of this dispatch ever left a worker: every claim on it so far was given up before a send (a send held
   * back for lagging replicas, a recoverer that only waited or looked). Nothing can have landed, so even a target
   * nobody can check is sent to (or the effect refused) instead of being settled AMBIGUOUS.
   */
  neverSent?: boolean;
};

/** How recovery may settle an open dispatch, by the target's effective tier at this moment. */
export type RecoveryMode = { mode: 'resend-same-key' } | { mode: 'lookup' } | { mode: 'ambiguous'; reason: string };

export function recoveryMode(timing: RecoveryTiming): RecoveryMode {
  if (timing.tier === 1) {
    const age = timing.now - timing.dispatchedAt;
    if (age <= timing.dedupWindowMs - timing.dedupMarginMs) return { mode: 'resend-same-key' };
    if (timing.queryable) return { mode: 'lookup' };
    return { mode: 'ambiguous', reason: 'the idempotency key may have expired at the target and the target cannot be queried' };
  }
  if (timing.tier === 2) return { mode: 'lookup' };
  return { mode: 'ambiguous', reason: 'the target neither dedupes nor can be queried, so nobody can tell whether the send landed' };
}

/**
 * Instant from which a lookup that finds nothing may be believed (I2). Until then bytes a sender wrote may still
 * be on their way to the target. A sender stops writing at its send deadline, or earlier when it died: once its
 * death is proven it can write nothing new (a sender checks its fencing epoch right before the network, and the
 * claim has moved), so only what it wrote before dying is still travelling. Either way the settle margin covers
 * the travel time of bytes already written.
 */
export function absenceTrustedAt(timing: Pick<RecoveryTiming, 'sendDeadline' | 'settleMarginMs'> & { deathProvenAt?: number | null }): number {
  const stoppedBy = timing.deathProvenAt === null || timing.deathProvenAt === undefined ? timing.sendDeadline : Math.min(timing.sendDeadline, timing.deathProvenAt);
  return stoppedBy + timing.settleMarginMs;
}

/** The longest recovery waits between resends of a dispatch that keeps getting no definite answer. */
export const UNKNOWN_BACKOFF_CAP_MS = 60 * 60 * 1000;

/**
 * Earliest instant recovery may resend a dispatch whose requests got `unknownAnswers` indefinite answers, or null
 * when none did: the settle margin after the last one, doubled for each further one, at most
 * UNKNOWN_BACKOFF_CAP_MS. Under a stored 500 Stripe replays the same answer for 24 h, so each resend is one write
 * that can only say what the lookup before it did not find; spacing them keeps that to a few dozen a day.
 */
export function resendAfterUnknownAt(timing: Pick<RecoveryTiming, 'settleMarginMs' | 'unknownAnswers' | 'lastUnknownAt'>): number | null {
  const count = timing.unknownAnswers ?? 0;
  if (count <= 0 || timing.lastUnknownAt === null || timing.lastUnknownAt === undefined) return null;
  const backoff = Math.min(UNKNOWN_BACKOFF_CAP_MS, timing.settleMarginMs * 2 ** Math.min(count - 1, 30));
  return timing.lastUnknownAt + backoff;
}

/** A lookup's answer. Found means the target returned an object, whatever its id looks like (issue 6, item 6). */
export type Lookup = { state: 'not-run' } | { state: 'found'; found: string | null; object: JsonObject | null } | { state: 'absent' };

export type RecoveryStep =
  | { do: 'resend'; outcome: 'COMMITTED_BY_RETRY' | 'REAPPLIED_AFTER_QUERY' }
  | { do: 'lookup' }
  | { do: 'commit-found'; found: string | null }
  | { do: 'refuse'; outcome: 'REFUSED:lease_at_recovery' | 'REFUSED:stale_premise_at_recovery' }
  | { do: 'ambiguous'; reason: string }
  | { do: 'wait'; until: number; reason: string }
  | { do: 'unresolved'; reason: string };

const BACKOFF_REASON = 'a request under this key got no definite answer, which the target may replay to every resend; resends wait the settle margin after the last such answer, doubled for each one, at most an hour';

/**
 * One step of recovery for an open dispatch whose claim this recoverer holds (DESIGN §7). Called again with the
 * lookup's answer when it asks for one. What landed is recorded even when the re-check failed: it is not undone.
 * `recheck` is null when the re-check itself could not run (the approval or the premises could not be read):
 * nothing may be sent then, but a lookup still settles an effect that landed (issue 6, item 8).
 *
 * Tier 1 inside the key window resends at once, without a lookup, only when no request of this dispatch has got an
 * indefinite answer: after a crash the target either never saw the request or holds its answer (the landing) under
 * the key, so the resend lands once or is answered with that landing (COMMITTED_BY_RETRY). Once a request got no
 * definite answer (`unknownAnswers`), that answer may be what the target stored: Stripe keeps a 500 under the key
 * and replays it to every later request for 24 h (stripe-facts §3), so a resend would learn nothing, however often
 * it is repeated, while the refund may have landed. Recovery then looks the effect up first, as past the window:
 * found is COMMITTED_ON_QUERY; absent is trusted after the deadline plus the settle margin, and the resend that
 * follows (still COMMITTED_BY_RETRY) also waits for resendAfterUnknownAt, so a key that keeps answering nothing
 * is resent at doubling intervals, not on every pass. A target that cannot be queried can only be resent to, with
 * the same spacing. A target that can neither dedupe nor be queried (tier 3) is AMBIGUOUS, unless none of the
 * dispatch's requests ever left (`neverSent`): then it is sent once, or refused on a failed re-check.
 */
export function planRecovery(timing: RecoveryTiming, recheck: Checks | null, lookup: Lookup): RecoveryStep {
  const mode = recoveryMode(timing);
  const failure = recheck === null ? 'unreadable' : recheckFailure(recheck);
  if (mode.mode === 'ambiguous') {
    if (timing.neverSent !== true) return { do: 'ambiguous', reason: mode.reason };
    if (failure === 'unreadable') return { do: 'unresolved', reason: 'nothing of this dispatch was ever sent, but the approval and premises could not be re-read, so nothing may be sent or refused yet' };
    if (failure === 'lease') return { do: 'refuse', outcome: 'REFUSED:lease_at_recovery' };
    if (failure === 'stale_premise') return { do: 'refuse', outcome: 'REFUSED:stale_premise_at_recovery' };
    return { do: 'resend', outcome: 'REAPPLIED_AFTER_QUERY' };
  }
  const resendAfter = resendAfterUnknownAt(timing);
  if (mode.mode === 'resend-same-key' && failure === null && resendAfter === null) return { do: 'resend', outcome: 'COMMITTED_BY_RETRY' };
  if (!timing.queryable) {
    if (mode.mode === 'resend-same-key' && failure === null && resendAfter !== null) {
      if (timing.now < resendAfter) return { do: 'wait', until: resendAfter, reason: BACKOFF_REASON };
      return { do: 'resend', outcome: 'COMMITTED_BY_RETRY' };
    }
    if (failure === 'unreadable') return { do: 'unresolved', reason: 'the re-check could not be read and the target cannot be queried; retrying later' };
    return { do: 'ambiguous', reason: `the re-check failed (${failure ?? 'unknown'}) and the target cannot be queried to learn whether the first send landed` };
  }
  switch (lookup.state) {
    case 'not-run':
      return { do: 'lookup' };
    case 'found':
      return { do: 'commit-found', found: lookup.found };
    case 'absent': {
      const trustedAt = absenceTrustedAt(timing);
      if (timing.now < trustedAt) return { do: 'wait', until: trustedAt, reason: 'a lookup that finds nothing is trusted only after the last send stopped (its deadline, or its sender\'s proven death) plus the settle margin' };
      if (failure === 'unreadable') return { do: 'unresolved', reason: 'nothing landed, but the approval and premises could not be re-read, so nothing may be sent or refused yet' };
      if (failure === 'lease') return { do: 'refuse', outcome: 'REFUSED:lease_at_recovery' };
      if (failure === 'stale_premise') return { do: 'refuse', outcome: 'REFUSED:stale_premise_at_recovery' };
      if (resendAfter !== null && timing.now < resendAfter) return { do: 'wait', until: resendAfter, reason: BACKOFF_REASON };
      return { do: 'resend', outcome: mode.mode === 'resend-same-key' ? 'COMMITTED_BY_RETRY' : 'REAPPLIED_AFTER_QUERY' };
    }
    default: {
      const never: never = lookup;
      return never;
    }
  }
}
