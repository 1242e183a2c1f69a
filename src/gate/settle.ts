// Settling an open dispatch: what landed is committed, a definite no is a refusal, what nobody can tell is
// AMBIGUOUS. A sender that lost its claim meanwhile cannot settle; its answer is recorded as LATE_RESULT, and the
// effect's state acts on it when it is definite (late-5.lua), so the next holder never resends after a definite
// no and commits a landing it did not see.
import type { Checks, CommitVia, Draft } from '../core/entries.js';
import type { Effect } from '../core/effects.js';
import { lateLanding } from '../core/decisions.js';
import { errorCode } from '../core/errors.js';
import { isJsonObject, type Json, type JsonObject } from '../core/json.js';
import { NOTHING_LANDED_SUFFIX, REFUSED_BEFORE_SENDING_PREFIX, REFUSED_BY_TARGET_PREFIX, type Outcome } from '../core/outcomes.js';
import { quote, quoteError, quoteObject, QUOTE_LIMITS, type QuoteLimits } from '../core/quote.js';
import { objectId, type Rejected } from '../core/target.js';
import { HEARD_KEPT, type GateContext, type Settled } from './context.js';
import { isRedisOutage, RedisReplyLost } from '../redis/client.js';
import type { LateEffect } from '../redis/journal.js';
import { lookUp } from './reads.js';

/**
 * Where an open dispatch stands for its holder: the chain head it last saw and the approval it reserved on; `boundAt`,
 * when the holder's own binding put the effect in the effects-by-time index (a submit that bound it new). Absent
 * otherwise: a script reads the binding's time in that index (lib.lua apply_upkeep): the submit's binding step, which
 * found the binding made, or one right before the settle (journal.ts settle), then the settle's upkeep
 * (journal.ts settledAfterSend).
 */
/** `attempt`: the dispatch attempt whose premise read this holding's send follows (ReadContext.attempt). */
/** `indexEntry`: the open-dispatch index entry ("<effect id>:<token>") the submit that dispatched wrote, when it did. */
/**
 * `neverSent`: set by a submit whose dispatch is the effect's first (its chain held no DISPATCHED), so that its send's
 * checks, like its premise read, take nothing at the target for this effect's own (SendContext.neverSent); and by
 * recovery for such a dispatch none of whose requests ever left (take-over-1's `neverSent`), for its resend.
 */
/** `dispatchedAt`: when the effect was first dispatched (its first DISPATCHED entry, Redis ms), for its lookups (ReadContext.dispatchedAt). */
/** `currency`: the currency premise the open dispatch was decided on, for its lookups (ReadContext.currency); absent when its premises hold none. */
export type Holding = { partition: string; effectId: string; epoch: number; head: string; approvalId: string; boundAt?: number; attempt?: string; indexEntry?: string; neverSent?: true; dispatchedAt?: number; currency?: string };

/**
 * The fields of a landed object its receipt reads: the evidence id (verify.ts), and what the final money is derived
 * from (final-money.ts refundFromResult: object, id, status, amount, failure_reason, charge), with the rest of the
 * Stripe summaries' scalars (src/stripe/summaries.ts).
 */
const LANDED_FIELDS = ['id', 'object', 'status', 'amount', 'currency', 'charge', 'payment_intent', 'failure_reason', 'customer', 'type', 'created', 'replayed'] as const;

/** How long a kept field's text may be: Stripe's ids and statuses are far shorter. */
const LANDED_FIELD_LIMITS: QuoteLimits = { ...QUOTE_LIMITS, stringChars: 500 };

/**
 * A landed object as an entry records it: quoted (bounded), with its LANDED_FIELDS taken from the object before it was
 * quoted and kept when quoting cut them off (an object past the quote limits becomes `{ truncated, preview }`; one
 * with too many fields loses the rest). A refund that carries a lot of metadata keeps its id as evidence and its
 * status for the final money.
 */
export function quoteLanded(landed: JsonObject): JsonObject {
  const result = quoteObject(landed);
  for (const field of LANDED_FIELDS) {
    if (Object.hasOwn(result, field)) continue;
    let value: unknown;
    try {
      value = Object.hasOwn(landed, field) ? landed[field] : undefined;
    } catch {
      continue;
    }
    if (typeof value === 'string' || typeof value === 'boolean' || value === null || (typeof value === 'number' && Number.isFinite(value))) result[field] = quote(value, LANDED_FIELD_LIMITS);
  }
  return result;
}

export async function recordLate(ctx: GateContext, at: Holding, outcome: 'landed' | 'rejected' | 'unknown', payload: Json, error: string | null): Promise<void> {
  const result = outcome === 'landed' && isJsonObject(payload) ? quoteLanded(payload) : quote(payload);
  const draft: Draft<'LATE_RESULT'> = { kind: 'LATE_RESULT', owner: ctx.owner, epoch: at.epoch, outcome, result, error: error === null ? null : quoteError(error) };
  const recorded = await ctx.journal.late(at.partition, at.effectId, draft, at.approvalId);
  ctx.logger.warn({ effectId: at.effectId, epoch: at.epoch, outcome, effect: recorded.effect }, 'late result from a fenced-out send recorded');
  rereadIfLanded(ctx, at.effectId, recorded.effect);
}

/**
 * After a late landing committed an effect settled without it (late-5: `committed` from AMBIGUOUS, `relanded` from a
 * refusal): its facts are re-read, as a settle's on a marked subject are, since no settle of it comes to do so. What
 * came for its subject while it was settled without a landing was recorded on nothing: a customer's deletion applied
 * then (src/facts/apply.ts foldDeletion), a dispute. Late landings are rare; so is this read.
 */
export function rereadIfLanded(ctx: GateContext, effectId: string, effect: LateEffect): void {
  if (effect === 'committed' || effect === 'relanded') ctx.rereadFacts?.(effectId);
}

/**
 * After a COMMITTED or AMBIGUOUS whose settle said a payment fact came for the subject (a dispute, perhaps while this
 * effect was in flight, when it was recorded on nothing): starts a re-read of the effect's facts, so the receipt and
 * its alerts (exposure: the refund and a chargeback) follow in seconds. The effect is settled whatever comes of it,
 * so its answer does not wait for the reads (each may take its whole read budget); a failed re-read is logged by
 * whoever runs it, and the reconciler reads the effect again on its next pass.
 */
function rereadIfMarked(ctx: GateContext, effectId: string, reread: boolean): void {
  if (reread) ctx.rereadFacts?.(effectId);
}

/**
 * Where a holder's settle goes: after the chain head it saw, on the approval it reserved on; `boundAt`, when known, lets
 * the journal tell a late settle from a prompt one without a read (journal.ts settle puts a late one on the watch list
 * before writing it).
 */
function settleAt(at: Holding): { head: string; approvalId: string; boundAt?: number } {
  return at.boundAt === undefined ? { head: at.head, approvalId: at.approvalId } : { head: at.head, approvalId: at.approvalId, boundAt: at.boundAt };
}

/** Commits what landed, or records it as late when someone else now holds the effect. */
export async function commit(ctx: GateContext, at: Holding, via: CommitVia, landed: JsonObject, rechecked: Checks | null, outcome: Outcome): Promise<Settled> {
  const result = quoteLanded(landed);
  const found = objectId(result);
  let reply: Awaited<ReturnType<GateContext['journal']['settle']>>;
  try {
    reply = await ctx.journal.settle(at.partition, at.effectId, at.epoch, { kind: 'COMMITTED', via, result, found, rechecked, epoch: at.epoch }, settleAt(at));
  } catch (error) {
    // The settle was written and its reply lost with the connection (the client never sends it again): when the chain
    // already ends in this very commit, the effect is committed, by this send.
    const own = error instanceof RedisReplyLost ? await ownCommitAt(ctx, at, found, via) : null;
    if (own !== null) return committed(ctx, at, outcome, via, found, own, false);
    // Redis was away: what landed is kept for this process's next pass over the effect (GateContext.heard).
    if (isRedisOutage(error)) {
      if (ctx.heard.size >= HEARD_KEPT) ctx.heard.delete(ctx.heard.keys().next().value ?? '');
      ctx.heard.set(at.effectId, { via, result, rechecked, outcome, head: at.head, epoch: at.epoch, approvalId: at.approvalId });
      ctx.logger.warn({ effectId: at.effectId, found }, 'the send landed but Redis could not record it; this process commits it on its next pass over the effect');
    }
    throw error;
  }
  ctx.heard.delete(at.effectId);
  if (reply.status !== 'OK') {
    await recordLate(ctx, at, 'landed', result, null);
    return { kind: 'skipped', effectId: at.effectId, reason: `the send landed but the claim had moved on (${reply.status}); recorded as LATE_RESULT` };
  }
  return committed(ctx, at, outcome, via, found, reply.now, reply.reread);
}

/**
 * A commit written at `now` (Redis ms): logged, its place on the facts' watch list set to its settle time (a late one
 * was put there before the settle: journal.ts settle), and a marked subject's facts re-read.
 */
function committed(ctx: GateContext, at: Holding, outcome: Outcome, via: CommitVia, found: string | null, now: number, reread: boolean): Settled {
  ctx.journal.settledAfterSend(at.effectId, now, at.boundAt);
  ctx.logger.info({ effectId: at.effectId, outcome, via, found }, 'committed');
  rereadIfMarked(ctx, at.effectId, reread);
  return { kind: 'settled', effectId: at.effectId, outcome, evidence: found };
}

/**
 * When the COMMITTED this holder's settle wrote was recorded (its entry's time), if the effect's chain ends in it (its
 * epoch, its evidence, its way, right after the head it settled on); null when it does not or cannot be read now (the
 * next pass over the effect finds it). A settle that did not run leaves the chain at that head.
 */
async function ownCommitAt(ctx: GateContext, at: Holding, found: string | null, via: CommitVia): Promise<number | null> {
  try {
    const last = (await ctx.journal.entries(at.partition, at.effectId)).at(-1);
    return last?.kind === 'COMMITTED' && last.epoch === at.epoch && last.found === found && last.via === via && last.prev === at.head ? last.at : null;
  } catch {
    return null;
  }
}

/**
 * After a definite refusal, looks once more: a refusal can hide an earlier attempt that did land (for Stripe, a
 * resend refused because the refund already exists). Only then is the effect settled as a target error.
 * `nothingLeft`: nothing of the effect can be at the target (no earlier send of it can have landed, SendContext.neverSent,
 * and the target's refusal proves this send's requests did not: Target.refusalProvesNothingLanded), so what a lookup
 * would find labelled with its id (a refund made by hand) is someone else's, and the refusal stands without one. Its
 * reason says so (NOTHING_LANDED_SUFFIX), for the facts to agree: such a refund is no late landing of the effect.
 */
export async function settleRejected(ctx: GateContext, at: Holding, effect: Effect, rejection: { message: string; code: string | null; status: number | null }, rechecked: Checks | null, how: { onlyRequest: boolean; nothingLeft?: boolean }): Promise<Settled> {
  const { target } = ctx;
  if (target.queryable && how.nothingLeft !== true) {
    let found: JsonObject | null;
    try {
      found = await lookUp(ctx, at.effectId, effect, at);
    } catch (error) {
      // A lookup that can never tell again: the refusal stands when the refused request was the dispatch's only one
      // (a first send: its SDK retries ride its idempotency key, so Stripe replays the one answer), else AMBIGUOUS.
      if (isBlind(error) && !how.onlyRequest) return settleAmbiguous(ctx, at, `the target refused (${quoteError(rejection.message)}), and ${blindReason(error)}`, rechecked);
      if (isBlind(error)) return settleRefused(ctx, at, rejection, rechecked, false);
      await ctx.journal.releaseClaim(at.partition, at.effectId, ctx.owner, at.epoch);
      return { kind: 'unresolved', effectId: at.effectId, outcome: 'UNRESOLVED:lookup_failed', error: `the target refused (${rejection.message}) and the lookup that would confirm nothing landed failed: ${quoteError(error)}` };
    }
    if (found !== null) return commit(ctx, at, 'failed-but-landed', found, rechecked, 'COMMITTED_ON_QUERY');
  }
  return settleRefused(ctx, at, rejection, rechecked, how.nothingLeft === true);
}

/** `nothingLeft`: as settleRejected's; only a refusal that proves it says so in its reason (refusalLeftNothing). */
async function settleRefused(ctx: GateContext, at: Holding, rejection: { message: string; code: string | null; status: number | null }, rechecked: Checks | null, nothingLeft: boolean): Promise<Settled> {
  // A refusal with no status is the target's own check's, made before any request left: its reason says so.
  const said = `${rejection.status === null ? REFUSED_BEFORE_SENDING_PREFIX : REFUSED_BY_TARGET_PREFIX}${quoteError(rejection.message)}`;
  const reason = nothingLeft ? `${said}${NOTHING_LANDED_SUFFIX}` : said;
  const reply = await ctx.journal.settle(at.partition, at.effectId, at.epoch, { kind: 'REFUSED', code: 'REFUSED:target_error', reason, checks: null, rechecked, changes: [], resolves: true }, settleAt(at));
  if (reply.status === 'LATE') return commitReportedLanding(ctx, at, rechecked);
  if (reply.status !== 'OK') {
    await recordLate(ctx, at, 'rejected', { code: rejection.code, status: rejection.status }, rejection.message);
    return { kind: 'skipped', effectId: at.effectId, reason: 'the target refused but the claim had moved on; recorded as LATE_RESULT' };
  }
  ctx.journal.settledAfterSend(at.effectId, reply.now, at.boundAt);
  ctx.logger.info({ effectId: at.effectId, code: rejection.code }, 'target refused');
  return { kind: 'settled', effectId: at.effectId, outcome: 'REFUSED:target_error', reason };
}

/**
 * A lookup that can no longer tell whether the effect landed, and never will (lookup_blind: for Stripe, a customer
 * deleted since the send). Asking again would answer the same, and "nothing found" cannot be trusted: the effect is
 * settled AMBIGUOUS, its amount kept reserved, for a person to check at the target.
 */
export function isBlind(error: unknown): boolean {
  return errorCode(error) === 'lookup_blind';
}

export function blindReason(error: unknown): string {
  return `the lookup can no longer tell whether it landed (${quoteError(error)})`;
}

export function rejectionOf(error: Rejected): { message: string; code: string | null; status: number | null } {
  return { message: error.message, code: error.details.code, status: error.details.status };
}

/**
 * A fenced-out sender reported its request landed (late-5) while this holder was settling the dispatch otherwise:
 * settle-5 answered LATE, and what landed is committed, as recovery commits a reported landing (recover.ts), never
 * refused (which would give the landed amount back to the caps) nor left AMBIGUOUS.
 */
async function commitReportedLanding(ctx: GateContext, at: Holding, rechecked: Checks | null): Promise<Settled> {
  const entries = await ctx.journal.entries(at.partition, at.effectId);
  const late = lateLanding(entries);
  const landed: JsonObject = late && isJsonObject(late.result) ? late.result : { id: null };
  ctx.logger.warn({ effectId: at.effectId }, 'a landing was reported while the dispatch was being settled otherwise; committing it');
  return commit(ctx, { ...at, head: entries.at(-1)?.hash ?? at.head }, 'late-result', landed, rechecked, 'COMMITTED_ON_QUERY');
}

export async function settleAmbiguous(ctx: GateContext, at: Holding, reason: string, rechecked: Checks | null): Promise<Settled> {
  const reply = await ctx.journal.settle(at.partition, at.effectId, at.epoch, { kind: 'AMBIGUOUS', reason, rechecked, epoch: at.epoch }, settleAt(at));
  if (reply.status === 'LATE') return commitReportedLanding(ctx, at, rechecked);
  if (reply.status !== 'OK') return { kind: 'skipped', effectId: at.effectId, reason: `settled by someone else (${reply.status})` };
  ctx.journal.settledAfterSend(at.effectId, reply.now, at.boundAt);
  ctx.logger.warn({ effectId: at.effectId, reason }, 'ambiguous');
  rereadIfMarked(ctx, at.effectId, reply.reread);
  return { kind: 'settled', effectId: at.effectId, outcome: 'AMBIGUOUS', reason };
}

export async function refuseAtRecovery(ctx: GateContext, at: Holding, outcome: 'REFUSED:lease_at_recovery' | 'REFUSED:stale_premise_at_recovery', checks: Checks): Promise<Settled> {
  const reason = outcome === 'REFUSED:lease_at_recovery' ? checks.approvalProblems.join('; ') : checks.violations.join('; ');
  const reply = await ctx.journal.settle(at.partition, at.effectId, at.epoch, { kind: 'REFUSED', code: outcome, reason, checks: null, rechecked: checks, changes: checks.changes, resolves: true }, settleAt(at));
  if (reply.status === 'LATE') return commitReportedLanding(ctx, at, checks);
  if (reply.status !== 'OK') return { kind: 'skipped', effectId: at.effectId, reason: `settled by someone else (${reply.status})` };
  ctx.journal.settledAfterSend(at.effectId, reply.now, at.boundAt);
  ctx.logger.info({ effectId: at.effectId, outcome, reason }, 'refused at recovery');
  return { kind: 'settled', effectId: at.effectId, outcome, reason, changes: checks.changes };
}
