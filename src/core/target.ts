// The target port: what the gate needs from whatever moves the money (Stripe, or an in-memory fake in tests).
import type { Tier } from './decisions.js';
import { EFFECT_KINDS, type Effect, type EffectKind } from './effects.js';
import { InterlockError } from './errors.js';
import type { JsonObject } from './json.js';

/**
 * One send, bounded by its deadline. stripe-node has no AbortSignal, so a target gives every call of the send
 * `timeLeftMs()` as its timeout and makes no retries of its own: nothing of this send may reach the target after the
 * deadline the settle margin counts from. A send the gate aborts earlier has no time left from then on, and the
 * target closes its requests still open when asked (Target.abortSends).
 */
export type SendContext = {
  /** Milliseconds left before the send deadline; 0 or less means do not start anything. */
  timeLeftMs(): number;
  /**
   * Called right before the request is handed to the network. Throws `SendFenced` when this sender may no longer
   * send: it lost its claim (another worker took over while this process was frozen), or the deadline passed.
   */
  beforeWrite(): Promise<void>;
  /**
   * The approved request's id when the effect id was derived from one, else null. Every send of one effect carries
   * the same value (recovery reads it from the first PROPOSED), so a target may write it into what it creates
   * without changing the parameters its idempotency check compares.
   */
  readonly requestId: string | null;
  /** The dispatch attempt this send is, as its premise read named it (ReadContext.attempt); absent when none did. */
  readonly attempt?: string;
  /** As ReadContext.neverSent, for this send's own checks before it writes (the refund target's remainder). */
  readonly neverSent?: true;
};

/** Reads (lookups, facts) are bounded too; a read that fails or times out throws, it never answers "fine". */
export type ReadContext = {
  timeoutMs: number;
  /**
   * True for the gate's own premise read: right before a dispatch, or before a resend at recovery. A target may keep
   * what it read then for the send's checks (the credit target's "already compensated"); a read for any other purpose
   * (a decision, a support tool's look) may be older than the send by any amount.
   */
  premiseCheck?: boolean;
  /**
   * With `premiseCheck`: the dispatch attempt this read is for, the same token its send's context carries
   * (SendContext.attempt). What a target keeps of the read is for that send only: an attempt refused before it sent
   * (its approval out of room, say) leaves a read another attempt must not take for its own.
   */
  attempt?: string;
  /**
   * No send of this effect can have landed: the journal holds no dispatch of it whose send may have gone out (the
   * gate's premise read, and the send, of a first dispatch; and recovery's re-read and resend of a first dispatch
   * none of whose requests ever left, its first send held back or its dispatch step's answer lost). So no object at
   * the target is this effect's own, whatever its labels say: one carrying the effect id (a refund made by hand with
   * the id copied from the API's answer) is someone else's money out, and a target counts it as such in its facts and
   * its pre-send checks. Absent, a target may leave out the object its lookup would take for this effect's landed
   * send (the refund target's `refunded_by_others`), as recovery's re-read before a resend that may follow a landed
   * send needs. Never set for a read other than the gate's.
   */
  neverSent?: true;
  /**
   * For a lookup: when the effect was first dispatched (its first DISPATCHED entry, Redis ms), where the caller knows
   * it. Nothing of the effect's own can be older at the target (the entry is written before any send), so a target may
   * read only what was made since (less a margin for clock skew between Redis and the target), and may hold an
   * unlabelled object made since that looks like the effect's send (its amount, its label removed by hand) against
   * the answer "nothing landed" (the credit target's lookup_blind). Absent: the target reads as far back as it can.
   */
  dispatchedAt?: number;
  /**
   * For a lookup told `dispatchedAt`: the currency the effect's money was decided in (its open dispatch's `currency`
   * premise, lowercase), which may not be the recovering worker's own (a credit decided in usd, recovered by a worker
   * set to jpy during a rolling change of INTERLOCK_CREDIT_CURRENCY). A target whose currency is its configuration (the
   * credit target) judges what it finds, and states the effect's amount, in it. Absent with `dispatchedAt`: the chain
   * does not say (a proposal recorded without the premise), so a lookalike of the effect's amount in any currency may be
   * its send's.
   */
  currency?: string;
};

export interface Target {
  readonly name: string;
  readonly tier: Tier;
  /** Whether `query` can find an effect by its id (Stripe: a refund whose metadata carries the effect id). */
  readonly queryable: boolean;
  /** How long the target remembers an idempotency key (Stripe: 24 h). */
  readonly dedupWindowMs: number;
  /**
   * A definite refusal of a send (Rejected) proves that none of that send's requests landed: every attempt rides the
   * send's one idempotency key, and the target answers a repeated key with its first answer (Stripe replays a stored
   * response), while its own pre-send checks refuse before anything leaves. So for an effect none of whose sends can
   * have landed before (SendContext.neverSent), a refusal leaves nothing of it at the target, and the gate settles it
   * without a lookup, which would take an object labelled with the effect id by someone else for its landing. Absent
   * or false (a target that may land a request and then answer a refusal): the gate looks the effect up after every
   * refusal.
   */
  readonly refusalProvesNothingLanded?: boolean;
  /** Every send ends by this long after it starts; the claim outlives it. */
  readonly sendTimeoutMs: number;
  /** The effect kinds this target moves. */
  readonly kinds: readonly EffectKind[];
  /** The premise names it can read, or null when it reads any name it is asked for. */
  readonly facts: readonly string[] | null;
  /**
   * The premise names whose value its own refunds on a payment change (Stripe: `refunded_by_others`, `refundable`).
   * A refund decided on one of them holds its payment while it is out, so a second such refund waits and reads again
   * (REFUNDS_HOLD, src/core/effects.ts): a read sees only what has landed, never what another worker is sending.
   * None when absent.
   */
  readonly movedBySends?: readonly string[];
  /**
   * Closes at once the requests still open of the sends the gate aborted (their `timeLeftMs()` is 0 from then on), so
   * no byte of them leaves after: one still connecting never writes its body, one waiting for its answer is ended
   * (the send's outcome unknown, as the abort already made it). The gate aborts the sends of a worker whose heartbeat
   * key could lapse soon, for recovery then trusts an empty lookup a settle margin after the lapse (src/gate/send.ts).
   * Synchronous: the gate frees the sends' watchdog slots right after. Absent: the target cannot close its requests,
   * so the gate does not abort its sends, and the send watchdog kills the process at the lapse instead, which does.
   */
  abortSends?(): void;
  /**
   * Sends. Throws `Rejected` for a definite no, `SendFenced` when it did not send (with the error that stopped it as its
   * `cause`, when one did: a read before the send rate-limited, a key refused), a `target_misconfigured` error when the
   * key was refused (Stripe ran nothing); anything else means the outcome is unknown.
   */
  apply(effectId: string, effect: Effect, context: SendContext): Promise<JsonObject>;
  /** The landed object for this effect id, or null when there is none. Throws when it cannot tell. */
  query(effectId: string, effect: Effect, context: ReadContext): Promise<JsonObject | null>;
  /**
   * Reads the named facts as they are now (a missing fact is absent or null). Throws when it cannot read them; the
   * comparison with what the decision stood on is pure (comparePremises in decisions.ts).
   */
  readFacts(effectId: string, effect: Effect, names: readonly string[], context: ReadContext): Promise<JsonObject>;
}

/**
 * What is wrong with a target's declared shape, one sentence per problem; empty when the gate can rely on it. A
 * target is built by code the gate does not own (an embedder's, or one whose tier was read from a setting), and a
 * wrong declaration does not fail loudly later: a tier "1" reads as tier 3 (every crashed send settled AMBIGUOUS),
 * a missing `facts` or `kinds` fails every submit with a TypeError. Its timeouts are checked with the timing rules.
 */
export function targetProblems(target: Target): string[] {
  const t = target as { readonly [K in keyof Target]?: unknown };
  const problems: string[] = [];
  if (typeof t.name !== 'string' || t.name.length === 0) problems.push(`name (${shownValue(t.name)}) must be a non-empty string`);
  if (t.tier !== 1 && t.tier !== 2 && t.tier !== 3) problems.push(`tier (${shownValue(t.tier)}) must be the number 1, 2 or 3`);
  if (typeof t.queryable !== 'boolean') problems.push(`queryable (${shownValue(t.queryable)}) must be true or false`);
  if (t.refusalProvesNothingLanded !== undefined && typeof t.refusalProvesNothingLanded !== 'boolean') problems.push(`refusalProvesNothingLanded (${shownValue(t.refusalProvesNothingLanded)}) must be true or false when given`);
  if (t.refusalProvesNothingLanded === true && t.tier !== 1) problems.push('refusalProvesNothingLanded needs a tier-1 target: only a target that answers a repeated idempotency key with its first answer can prove by a refusal that nothing landed');
  // Tier 2 is the target recovery finds an effect on by its id (DESIGN: "queryable only"); one that can do neither is
  // tier 3, whose never-sent dispatches are sent once where a tier 2 that cannot look would settle them AMBIGUOUS.
  if (t.tier === 2 && t.queryable === false) problems.push('a tier-2 target (no dedupe on the effect id) must be queryable: recovery can only look its sends up; declare queryable: true, or tier 3 for a target that can neither dedupe nor be queried');
  const kinds = t.kinds;
  if (!Array.isArray(kinds) || kinds.length === 0 || !kinds.every((kind) => (EFFECT_KINDS as readonly unknown[]).includes(kind))) {
    problems.push(`kinds (${shownValue(kinds)}) must be a non-empty list of ${EFFECT_KINDS.join(', ')}`);
  }
  const facts = t.facts;
  if (facts !== null && !(Array.isArray(facts) && facts.every((name) => typeof name === 'string'))) {
    problems.push(`facts (${shownValue(facts)}) must be null (any premise name) or a list of premise names`);
  }
  const moved = t.movedBySends;
  if (moved !== undefined && !(Array.isArray(moved) && moved.every((name) => typeof name === 'string'))) {
    problems.push(`movedBySends (${shownValue(moved)}) must be a list of premise names, or absent`);
  }
  if (t.abortSends !== undefined && typeof t.abortSends !== 'function') problems.push(`abortSends (${shownValue(t.abortSends)}) must be a function when given`);
  for (const method of ['apply', 'query', 'readFacts'] as const) {
    if (typeof t[method] !== 'function') problems.push(`${method} (${shownValue(t[method])}) must be a function`);
  }
  return problems;
}

/**
 * A declared value as a refusal quotes it, whatever it is: a BigInt, a symbol, an object without a prototype or a
 * list holding one made the refusal itself throw a TypeError (JSON.stringify, String), hiding what was wrong.
 */
function shownValue(value: unknown, depth = 0): string {
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 40));
  if (typeof value === 'bigint') return `${value}n`;
  if (Array.isArray(value)) return depth > 0 ? 'a list' : `[${value.slice(0, 8).map((item) => shownValue(item, depth + 1)).join(', ')}${value.length > 8 ? ', …' : ''}]`;
  if (typeof value === 'object' && value !== null) return 'an object';
  if (typeof value === 'function') return 'a function';
  return String(value);
}

/** A definite refusal from the target (for Stripe, a 4xx that is not a rate limit or a conflict). Never resent. */
export class Rejected extends InterlockError {
  constructor(message: string, readonly details: { code: string | null; status: number | null; raw?: JsonObject } = { code: null, status: null }) {
    super('target_rejected', message);
    this.name = 'Rejected';
  }
}

/** The send did not start: the sender lost its claim or ran out of time before the request left the process. */
export class SendFenced extends InterlockError {
  constructor(message: string) {
    super('journal_contention', message, { retryable: true });
    this.name = 'SendFenced';
  }
}

/**
 * The id of a landed object, for evidence. A lookup that returns an object means found, whatever its id looks
 * like (issue 6, item 6): a numeric id is kept as text, and an object without one is still a landing.
 */
export function objectId(found: JsonObject): string | null {
  const id = found.id;
  if (typeof id === 'string' && id.length > 0) return id;
  if (typeof id === 'number' && Number.isFinite(id)) return String(id);
  return null;
}

/**
 * Fault injection only: "the process died at this point". The gate writes nothing more and rethrows it, exactly
 * as a SIGKILLed worker would leave the journal; a new gate instance then recovers.
 */
export class ProcessCrash extends Error {
  constructor(where: string) {
    super(`simulated crash ${where}`);
    this.name = 'ProcessCrash';
  }
}
