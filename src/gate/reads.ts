// The gate's reads of a target: the facts a decision stood on, and the lookup of an effect by its id. Each is bounded
// by the gate itself, as a send is (send.ts): the target is handed the read budget, and the gate stops waiting when
// it runs out, so a target whose read never answers (a socket with no timeout, an SDK call that ignores the budget)
// holds up neither a submit nor a recovery pass, which walks open effects one after another.
import type { Effect, EffectKind } from '../core/effects.js';
import { InterlockError } from '../core/errors.js';
import type { Json, JsonObject } from '../core/json.js';
import { PROPOSAL_LIMITS } from '../core/proposal.js';
import { quote, type QuoteLimits } from '../core/quote.js';
import { comparePremises, type PremiseReport } from '../core/decisions.js';
import type { ReadContext } from '../core/target.js';
import type { GateContext } from './context.js';

/**
 * What a target threw, safe to inspect: a value that `instanceof` cannot even look at (a Proxy whose traps throw) is
 * replaced by an Error that says so, so the gate's own classification of the answer never throws in its place.
 */
export function inspectable(thrown: unknown): unknown {
  try {
    void (thrown instanceof Error);
    return thrown;
  } catch {
    return new Error('the target threw a value that cannot be inspected');
  }
}

/**
 * `read()`, bounded by `timeoutMs` (ms). A read that answers a plain value or throws at once is taken as if it had
 * answered or failed asynchronously. Once the bound passes, the read's own late answer or rejection is ignored: the
 * race has subscribed to it, so a rejection after the timeout is handled, never an unhandled rejection.
 */
export function bounded<T>(what: string, timeoutMs: number, read: () => T | PromiseLike<T>): Promise<T> {
  let work: Promise<T>;
  try {
    work = Promise.resolve(read());
  } catch (error) {
    return Promise.reject(inspectable(error));
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new InterlockError('target_unavailable', `the target did not answer ${what} within the read timeout (${timeoutMs} ms)`)), timeoutMs);
  });
  return Promise.race([work.catch((error: unknown) => Promise.reject(inspectable(error))), timeout]).finally(() => clearTimeout(timer));
}

/** Whether a lookup's answer is an object with fields (not an array, a Date, a Map, a boxed value): a landing. */
function isPlainObject(value: unknown): value is JsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * What a lookup's answer says: a plain object is the landed object, null or undefined is "nothing landed" (a lookup
 * written as `list.find(...)` answers undefined), and anything else (an empty list, a number, a string) says neither,
 * so it is a failed lookup, never a landing.
 */
export function landingOf(answer: unknown): JsonObject | null {
  if (answer === null || answer === undefined) return null;
  let plain: boolean;
  try {
    plain = isPlainObject(answer);
  } catch {
    plain = false;
  }
  if (plain) return answer as JsonObject;
  let shape: string;
  try {
    shape = Array.isArray(answer) ? `a list of ${answer.length}` : typeof answer === 'object' ? 'an object that is not a plain one' : `a ${typeof answer}`;
  } catch {
    shape = 'a value that cannot be inspected';
  }
  throw new InterlockError('lookup_failed', `the target's lookup answered ${shape}, neither the landed object nor null; nothing can be told from it`);
}

/**
 * The target's lookup of an effect by its id, bounded: the landed object, or null when nothing landed. Throws when
 * the lookup fails, times out or answers anything else (landingOf); every lookup site settles that as
 * UNRESOLVED:lookup_failed, except a lookup that can never tell again (lookup_blind: settle.ts isBlind), AMBIGUOUS.
 * What the caller knows of the open dispatch (`at`, a Holding): `dispatchedAt`, the effect's first DISPATCHED entry's
 * time (Redis ms; ReadContext.dispatchedAt), and `currency`, the currency premise the dispatch was decided on
 * (ReadContext.currency), absent when its premises hold none.
 */
export async function lookUp(ctx: GateContext, effectId: string, effect: Effect, at: { dispatchedAt?: number; currency?: string } = {}): Promise<JsonObject | null> {
  const { dispatchedAt, currency } = at;
  const context: ReadContext = { timeoutMs: ctx.readTimeoutMs, ...(dispatchedAt === undefined ? {} : { dispatchedAt }), ...(currency === undefined ? {} : { currency }) };
  const answer: unknown = await bounded('the lookup', ctx.readTimeoutMs, () => ctx.target.query(effectId, effect, context));
  return landingOf(answer);
}

/**
 * The named facts, read from the target and bounded in time; what it answered, unchecked. `neverSent`: no send of the
 * effect can have landed yet (ReadContext.neverSent), so the target takes nothing it finds for the effect's own.
 */
export function readRawFacts(ctx: GateContext, effectId: string, effect: Effect, names: readonly string[], attempt: string, neverSent: boolean): Promise<unknown> {
  const context: ReadContext = { timeoutMs: ctx.readTimeoutMs, premiseCheck: true, attempt, ...(neverSent ? { neverSent: true } : {}) };
  return bounded('the premise read', ctx.readTimeoutMs, () => ctx.target.readFacts(effectId, effect, names, context));
}

/**
 * Whether `now`, a fact as the target answered it, is the plain JSON value `was` (what a decision stood on): the
 * same fields, items and scalars. The walk follows `was`, which a proposal bounds (PROPOSAL_LIMITS), so its work is
 * bounded however large `now` is. Throws when `now` cannot be read (a getter or a Proxy trap that throws).
 */
function sameFact(was: Json, now: unknown): boolean {
  if (was === null || typeof was !== 'object') return was === now;
  if (typeof now !== 'object' || now === null) return false;
  if (Array.isArray(was)) {
    if (!Array.isArray(now) || now.length !== was.length) return false;
    const items: readonly unknown[] = now;
    return was.every((item, index) => sameFact(item, items[index]));
  }
  if (Array.isArray(now)) return false;
  const fields = Object.keys(was);
  if (Object.keys(now).length !== fields.length) return false;
  const record = now as Record<string, unknown>;
  return fields.every((field) => Object.hasOwn(record, field) && sameFact(was[field] as Json, record[field]));
}

/**
 * The comparison of the facts a decision stood on (`decided`) with the facts the target answered now (`answered`).
 *
 * Only the names decided on are read from the answer (anything else it carries is ignored, never walked or quoted);
 * a name it lacks, or answers undefined for, reads as null. Each is compared as read, before anything is quoted: a
 * premise holds when the fact is the same plain JSON value. A fact that changed is recorded quoted within the limits
 * a proposal's premises are held to (PROPOSAL_LIMITS: 8 levels, 16,000 characters of JSON for all of them together,
 * shared among the changed ones), so a change that fits a proposal is recorded whole, and only a change past those
 * limits is recorded cut (marked `…`); cutting never makes an unchanged fact look changed, since the comparison came
 * first. Throws when the answer is not an object of facts, a fact cannot be read, or a fact that is not plain JSON
 * quotes as what was decided on; the caller makes that a PremiseReadError (premise_read_failed): nothing is sent or
 * refused on facts nobody could read. `kind`: the effect's, for the changes whose sentence depends on it (comparePremises).
 */
export function judgeFacts(decided: JsonObject, answered: unknown, kind: EffectKind | null = null): PremiseReport {
  if (typeof answered !== 'object' || answered === null || Array.isArray(answered)) {
    throw new Error(`the target answered the premise read with ${answered === null ? 'null' : Array.isArray(answered) ? 'a list' : `a ${typeof answered}`}, not an object of facts`);
  }
  const facts = answered as Record<string, unknown>;
  const changed = new Map<string, unknown>();
  for (const field of Object.keys(decided)) {
    const value = Object.hasOwn(facts, field) ? facts[field] : null;
    const now = value === undefined ? null : value;
    if (!sameFact(decided[field] as Json, now)) changed.set(field, now);
  }
  const share = Math.max(1, Math.floor(PROPOSAL_LIMITS.premiseChars / Math.max(1, changed.size)));
  const limits: QuoteLimits = { depth: PROPOSAL_LIMITS.premiseDepth, stringChars: share, items: share, totalChars: share };
  // What is recorded: the decided value where the fact is the same, the quoted fact where it changed.
  const current: JsonObject = {};
  for (const field of Object.keys(decided)) current[field] = changed.has(field) ? quote(changed.get(field), limits) : (decided[field] as Json);
  const report = comparePremises(decided, current, kind);
  // A changed fact quotes as what was decided on only when quoting hid the difference (NaN read as null, a Date as
  // its text): it is no fact the decision could be held to, and its change would be recorded as no change at all.
  if (report.changes.length !== changed.size) throw new Error(`the target answered ${[...changed.keys()].filter((field) => !report.changes.some((change) => change.field === field)).join(', ')} with a value that is not plain JSON`);
  return report;
}
