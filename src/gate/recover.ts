// recover(): every open dispatch ends COMMITTED, REFUSED or AMBIGUOUS (P), re-checking approval and premises
// before any resend and never resending blindly (DESIGN §7).
import { performance } from 'node:perf_hooks';
import { sendUnanswered } from '../core/alert-rules.js';
import { currencyOfEffectOrCredit } from '../core/effect-currency.js';
import { amountText, approvalProblems } from '../core/approval.js';
import { absenceTrustedAt, dispatchedEffect, firstProposal, lateLanding, openDispatch, planRecovery, recoveryMode, type Lookup, type RecoveryStep, type RecoveryTiming } from '../core/decisions.js';
import { isEffectId } from '../core/effect-id.js';
import { describeEffect, parseEffect, type Effect } from '../core/effects.js';
import type { Checks, Draft, Entry, EntryOf } from '../core/entries.js';
import { isJsonObject, type JsonObject } from '../core/json.js';
import { CAP_AT_RECOVERY_PREFIX, explainRecorded } from '../core/outcomes.js';
import { InterlockError, slowDownOf, type SlowDown } from '../core/errors.js';
import { quoteError } from '../core/quote.js';
import { currentOutcome } from '../core/verify.js';
import { objectId, ProcessCrash } from '../core/target.js';
import { checksOf, errorName, type GateContext, type RecoveryReport, type Settled } from './context.js';
import { limitedErrorLog } from '../log.js';
import { alertIdOf } from '../redis/alerts.js';
import { isOutboxEntry, OUTBOX_GRACE_MS, premiseMaxAgeMs, type OpenEffect } from '../redis/journal.js';
import { holdBack, markUnknown, sendOnce } from './send.js';
import { blindReason, commit, isBlind, refuseAtRecovery, rereadIfLanded, rejectionOf, settleAmbiguous, settleRejected, type Holding } from './settle.js';
import { lookUp } from './reads.js';
import { currencyDecidedOn, nextAttempt, readFacts } from './submit.js';

/** How long after a resend that got no definite answer a pass looks again: 1 s, doubling with each such answer, at most 30 s. */
export function resendRetryMs(unknownsBefore: number): number {
  return Math.min(1_000 * 2 ** Math.max(0, Math.min(unknownsBefore, 5)), 30_000);
}

/**
 * Stripe's rate limit as a recovery pass meets it (README "Rate limits"): the deployment's pause, the effects queue's,
 * which a pass honours as every effects worker does. `remaining`: the pause in force (PauseLeft). `pause`: pauses every
 * worker for `ms` (a call of the pass met a 429), never shortening a longer pause. `backoffMs`: how long a 429 that
 * names no Retry-After pauses (INTERLOCK_RATE_LIMIT_BACKOFF_MS).
 */
type RateLimitPause = { remaining(): Promise<PauseLeft>; pause(ms: number): Promise<void>; backoffMs: number };

/**
 * What is left of the effects queue's pause, in ms (0: none), as the pass honours it. `setByHand`: the pause found was
 * longer than any the service sets (queues/effects.ts LONGEST_OWN_PAUSE_MS), so nobody's 429 set it; it was cut to at
 * most Stripe's longest Retry-After, and an error logged naming its key and how to clear it. `leftMs`: what it had
 * left before the cut; `key`: the limiter key that held it.
 */
type PauseLeft = { ms: number; setByHand?: { leftMs: number; key: string } };

/** The pause after a 429 without Retry-After, for a pass given no RateLimitPause (INTERLOCK_RATE_LIMIT_BACKOFF_MS's default). */
const RATE_LIMIT_BACKOFF_MS = 1_000;

type Claim = { epoch: number; now: number; sendDeadline: number; deathProvenAt: number | null; late: string; unknowns: number; unknownAt: number | null; neverSent: boolean };

/** Effects whose last request this worker saw get no definite answer, and what it got; bounded, it is only for the alert's text. */
const LAST_ANSWERS_KEPT = 10_000;

export function createRecover(ctx: GateContext) {
  const { journal, heartbeat, target, timing, logger } = ctx;
  const lastAnswers = new Map<string, string>();
  // A pass a 429 stopped: logged as an outage is (log.ts), not once per pass while the limit lasts.
  const logRateLimited = limitedErrorLog(logger, 'Stripe rate-limited a recovery pass (429); it sent nothing more, and looks at the effects it left once the pause ends', { level: 'warn' });

  async function takeClaim(effectId: string, partition: string, indexed: readonly Indexed[], requeue?: Requeue): Promise<Claim | Settled> {
    const { now, state } = await journal.readState(partition, effectId);
    if (!state.open) {
      // Settled by someone else meanwhile. A landing this process heard while Redis was away is money that moved: on an
      // effect settled without one (another recoverer took the lapsed claim and, with a target it cannot ask, settled it
      // AMBIGUOUS, or refused it) it is recorded as the late landing it is, which commits the effect (late-5.lua); on
      // one committed, the journal has it already.
      const heard = ctx.heard.get(effectId);
      if (heard !== undefined && !state.committed) {
        const draft: Draft<'LATE_RESULT'> = { kind: 'LATE_RESULT', owner: ctx.owner, epoch: heard.epoch, outcome: 'landed', result: heard.result, error: null };
        const recorded = await journal.late(partition, effectId, draft, heard.approvalId);
        logger.warn({ effectId, epoch: heard.epoch, effect: recorded.effect }, 'a landing heard while Redis was away, on an effect settled without it since, recorded as a late landing');
        rereadIfLanded(ctx, effectId, recorded.effect);
      }
      ctx.heard.delete(effectId);
      // Index entries of an effect settled, or never dispatched: dropped once no dispatch can still follow them.
      for (const { entry } of indexed) if (!isOutboxEntry(entry)) await journal.unindexStale(entry, now);
      const outbox = await emptyOutbox(effectId, partition, indexed, now, requeue);
      if (outbox === 'queued') return { kind: 'skipped', effectId, reason: 'recorded, not judged yet: its job is queued (queued now if it had none), and its outbox entry stays until the job judges it' };
      // A pass with no queue to put jobs on (`interlock recover`, a library's loop) cannot queue it: the service's
      // recovery does. It is left for later (a grace period on: a loop without a queue is not woken more often).
      if (outbox === 'no-queue') return { kind: 'skipped', effectId, reason: "recorded, never queued: this pass has no queue to put its job on; the service's recovery queues it (start the service if it is stopped)", retryAt: now + OUTBOX_GRACE_MS };
      // Unjudged, so its money may still move: left for later, with when its grace ends (the pass's `nextAt`, and
      // `interlock recover`'s exit 4), like the one never queued.
      if (outbox === 'young') {
        const bound = indexed.filter(({ entry }) => isOutboxEntry(entry)).map(({ boundAt }) => boundAt);
        return { kind: 'skipped', effectId, reason: 'recorded: its outbox entry stays until its job judges it, and a pass with the queue looks at it once it is past the grace', retryAt: (bound.length === 0 ? now : Math.min(...bound)) + OUTBOX_GRACE_MS };
      }
      return { kind: 'skipped', effectId, reason: await notOpenReason(effectId, partition, outbox, requeue) };
    }
    let reason: 'own' | 'expired' | 'owner-dead';
    if (state.owner === ctx.owner && state.nonce === ctx.nonce) {
      if (ctx.busy.has(effectId)) return { kind: 'skipped', effectId, reason: 'held by a live sender (this worker)', holder: ctx.owner, retryAt: state.claimExpires };
      reason = 'own';
    } else if (state.claimExpires <= now) {
      reason = 'expired';
    } else {
      const liveness = await heartbeat.probe(state.owner, state.nonce);
      // A live holder keeps its claim; if it dies, its heartbeat lapses within ttlMs, and that is when to look again.
      if (liveness.alive) return { kind: 'skipped', effectId, reason: 'held by a live sender', holder: state.owner, retryAt: Math.min(state.claimExpires, liveness.now + liveness.ttlMs + 1) };
      reason = 'owner-dead';
    }
    const taken = await journal.takeOver(partition, effectId, { epoch: state.epoch, owner: state.owner, nonce: state.nonce }, { owner: ctx.owner, nonce: ctx.nonce, claimTtlMs: timing.claimTtlMs }, reason);
    switch (taken.status) {
      case 'OK':
        if (reason !== 'own') logger.info({ effectId, from: state.owner, reason, epoch: taken.epoch }, 'took over an open dispatch');
        ctx.events?.takeover?.(reason);
        return { epoch: taken.epoch, now: taken.now, sendDeadline: taken.sendDeadline, deathProvenAt: taken.deathProvenAt, late: taken.late, unknowns: taken.unknowns, unknownAt: taken.unknownAt > 0 ? taken.unknownAt : null, neverSent: taken.neverSent === true };
      case 'NOT_OPEN':
        return { kind: 'skipped', effectId, reason: 'no open dispatch (settled meanwhile)' };
      case 'MOVED':
        return { kind: 'skipped', effectId, reason: 'another recoverer took the claim first', holder: taken.owner, retryAt: now + 1_000 };
      case 'LIVE':
        return { kind: 'skipped', effectId, reason: 'the claim is still live', holder: state.owner, retryAt: taken.claimExpires };
      default: {
        const never: never = taken;
        return never;
      }
    }
  }

  /**
   * The approval, the subject's cap and the premises as they are now. Throws when any cannot be read. `neverSent`: read
   * as for a first dispatch (Holding.neverSent), nothing at the target being the effect's own. A subject cap its totals
   * (this effect's reservation among them) no longer fit, as after a cap set lower since the dispatch, is a brake as a
   * revoke is (README "The command line": `caps set SUBJECT 0` lets nothing move): it fails the re-check as the
   * approval does, so nothing is sent, and once nothing landed the effect is refused (REFUSED:lease_at_recovery, its
   * reason naming the cap) and its totals given back.
   */
  async function recheck(effectId: string, partition: string, dispatched: EntryOf<'DISPATCHED'>, effect: Effect, attempt: string, neverSent: boolean): Promise<Checks> {
    const { now, snapshot } = await ctx.approvals.describe(dispatched.approval);
    const currency = currencyDecidedOn(dispatched.premises, effect.kind, ctx.unanswered?.creditCurrency ?? null);
    const { amount } = describeEffect(effect);
    const leaseIssues = approvalProblems(snapshot, { now, subject: partition, amount, phase: 'recovery', currency });
    if (snapshot === null || leaseIssues.length > 0) return checksOf(snapshot, leaseIssues);
    const capIssue = subjectCapProblem(partition, await ctx.approvals.subjectCap(partition), amount, currency);
    if (capIssue !== null) return checksOf(snapshot, [capIssue]);
    const report = await readFacts(ctx, effectId, effect, dispatched.premises, attempt, neverSent);
    return checksOf(snapshot, [], report.violations, report.changes);
  }

  /**
   * A producer's outbox entries (journal.ts OUTBOX_TOKEN) older than OUTBOX_GRACE_MS, on an effect with no open
   * dispatch: the proposal was recorded and maybe not judged (its job never added, or removed before it judged the
   * effect). `requeue` (the effects queue's, given by the process that runs the queues) queues the latest proposal if it
   * stands unjudged, a no-op where its job exists. While a job stands for it the entries stay, scored as bound now, so
   * the pass after the next grace asks again (a job removed meanwhile is queued again then); once nothing is to be
   * queued (the effect judged, or its job failed for good and its not_judged alert raised) they go. Without `requeue`,
   * or when it fails, they stay for a pass that can. 'young': outbox entries, none past the grace.
   */
  async function emptyOutbox(effectId: string, partition: string, indexed: readonly Indexed[], now: number, requeue: Requeue | undefined): Promise<'queued' | 'no-queue' | 'young' | 'dropped' | 'none' | 'failed'> {
    const due = indexed.filter(({ entry, boundAt }) => isOutboxEntry(entry) && boundAt <= now - OUTBOX_GRACE_MS);
    if (due.length === 0) return indexed.some(({ entry }) => isOutboxEntry(entry)) ? 'young' : 'none';
    if (requeue === undefined) {
      // Without a queue a pass cannot tell whether a job stands for a proposal unjudged, but it can tell one judged:
      // an effect settled since (recovery committed it while its dead worker's job still stood) has nothing to queue.
      if (currentOutcome(await journal.entries(partition, effectId)) === null) return 'no-queue';
      for (const { entry } of due) journal.unindex(effectId, entry.slice(entry.indexOf(':') + 1));
      return 'dropped';
    }
    let queued: boolean;
    try {
      queued = await requeue(effectId, partition);
    } catch (error) {
      logger.warn({ err: error, effectId }, 'could not queue a recorded proposal that may have no job; the next recovery pass tries again');
      return 'failed';
    }
    if (queued) {
      await journal.outboxLater(due.map(({ entry }) => entry), now);
      return 'queued';
    }
    for (const { entry } of due) journal.unindex(effectId, entry.slice(entry.indexOf(':') + 1));
    return 'dropped';
  }

  /**
   * Why a pass did nothing to an effect with no open dispatch, when its outbox said nothing more: settled meanwhile, or
   * recorded and not judged (a proposal, or a re-decision after a refusal), and then whether a job stands for it. An
   * effect asked for by id (`only`: no index entries to look at) with a queue at hand is queued if it stands
   * unjudged with no job (requeue, a no-op where its job exists).
   */
  async function notOpenReason(effectId: string, partition: string, outbox: 'dropped' | 'none' | 'failed', requeue: Requeue | undefined): Promise<string> {
    const entries = await journal.entries(partition, effectId);
    if (currentOutcome(entries) !== null || !entries.some((entry) => entry.kind === 'PROPOSED')) return 'no open dispatch (settled meanwhile)';
    if (outbox === 'failed') return 'recorded, not judged: its job could not be looked up or queued now; the next recovery pass tries again';
    let queued = false;
    if (outbox === 'none' && requeue !== undefined) {
      try {
        queued = await requeue(effectId, partition);
      } catch (error) {
        logger.warn({ err: error, effectId }, 'could not queue a recorded proposal that may have no job');
        return 'recorded, not judged: its job could not be looked up or queued now; the next recovery pass with the queue tries again';
      }
    }
    if (queued) return 'recorded, not judged yet: its job is queued (queued now if it had none)';
    if (requeue === undefined) return 'recorded, not judged, no dispatch open: this pass has no queue to tell whether it has a job; the service\'s recovery queues one it lacks';
    return 'recorded, not judged, and not queued: no job can be queued for it (its job failed for good: see its not_judged alert, fix the cause and send the same request again)';
  }

  async function recoverOne(effectId: string, partition: string, indexed: readonly Indexed[] = [], requeue?: Requeue): Promise<Settled> {
    const claim = await takeClaim(effectId, partition, indexed, requeue);
    if ('kind' in claim) return claim;
    ctx.busy.hold(effectId);
    try {
      return await recoverClaimed(effectId, partition, claim);
    } finally {
      ctx.busy.release(effectId);
    }
  }

  async function recoverClaimed(effectId: string, partition: string, claim: Claim): Promise<Settled> {
    const { epoch } = claim;
    const entries = await journal.entries(partition, effectId);
    const dispatched = openDispatch(entries);
    const approvalId = dispatched?.approval ?? '-';
    // This pass's resend is an attempt of its own: its re-check's read is for its send only. A dispatch none of whose
    // requests ever left (take-over-1's neverSent), on a chain that holds no earlier dispatch whose send could land
    // late, has nothing of the effect's own at the target: an object labelled with its id was made by someone else (a
    // refund by hand, after an IN_FLIGHT answer said nothing had gone out), so its re-check and resend read and send
    // as a first dispatch's do (ReadContext.neverSent), and that money makes the premise stale instead of being taken
    // for the effect's landed send and sent again beside it.
    const firstSend = claim.neverSent && entries.filter((entry) => entry.kind === 'DISPATCHED').length === 1;
    // Nothing of the effect's own can be older than its first dispatch: its lookups read from there (ReadContext.dispatchedAt).
    const firstDispatchAt = entries.find((entry) => entry.kind === 'DISPATCHED')?.at;
    if (!dispatched) {
      await journal.releaseClaim(partition, effectId, ctx.owner, epoch);
      return { kind: 'skipped', effectId, reason: 'no open dispatch in the chain' };
    }
    const effect = parseEffect(dispatchedEffect(entries, dispatched), 'effect', { recorded: true });
    // The money its lookups judge is in the currency the open dispatch was decided in, not this worker's own (a credit
    // decided in usd, recovered by a worker set to jpy): ReadContext.currency. None recorded: the lookup weighs any.
    const decided = currencyDecidedOn(dispatched.premises, effect.kind, null);
    const holding: Holding = {
      partition,
      effectId,
      epoch,
      head: entries.at(-1)?.hash ?? '',
      approvalId,
      attempt: nextAttempt(ctx),
      ...(firstSend ? { neverSent: true as const } : {}),
      ...(firstDispatchAt === undefined ? {} : { dispatchedAt: firstDispatchAt }),
      ...(decided === null ? {} : { currency: decided }),
    };
    const settled = await settleClaimed(claim, holding, entries, dispatched, effect);
    await watchUnanswered(settled, partition, effect, currencyOfEffectOrCredit(entries, ctx.unanswered?.creditCurrency ?? null), dispatched.at, claim.now);
    return settled;
  }

  /**
   * After a pass over an open effect: raises its `send_unanswered` alert once it has been open without a definite
   * answer for longer than GateDeps.unanswered.afterMs since it was dispatched, and resolves it when it settles. A
   * failure here is logged, never thrown: what the pass did to the effect stands. `currency`: the currency of its money
   * (currencyOfEffectOrCredit: its chain's, a credit's configured one when the chain says none), null when unknown.
   */
  async function watchUnanswered(settled: Settled, partition: string, effect: Effect, currency: string | null, dispatchedAt: number, now: number, held?: string): Promise<void> {
    const watch = ctx.unanswered;
    if (!watch) return;
    const { effectId } = settled;
    const id = alertIdOf(effectId, 'send_unanswered');
    if (settled.kind === 'settled') {
      lastAnswers.delete(effectId);
      try {
        const done = await watch.alerts.resolve(id, `recovery: the effect settled ${settled.outcome}`);
        if (done?.resolved) logger.info({ alert: id, effectId, outcome: settled.outcome }, 'alert resolved: the effect Stripe gave no answer to has settled');
      } catch (error) {
        if (error instanceof ProcessCrash) throw error;
        logger.error({ err: error, alert: id, effectId }, `the effect settled but its alert could not be resolved; resolve it by hand: interlock alerts resolve ${id} --by <name>`);
      }
      return;
    }
    if (settled.kind === 'skipped') return;
    if (settled.kind === 'unresolved') {
      if (lastAnswers.size >= LAST_ANSWERS_KEPT) lastAnswers.clear();
      lastAnswers.set(effectId, settled.error);
    }
    const forMs = now - dispatchedAt;
    if (forMs <= watch.afterMs) return;
    const heard = lastAnswers.get(effectId) ?? null;
    // `held`: why the pass looked at the effect without sending (watchHeld), said after what the last request got.
    const lastAnswer = held === undefined ? heard : `${heard ?? 'no answer this worker heard'}; since then nothing is sent: ${held}`;
    try {
      // A pass that only waited, or was held, learned nothing new: an open alert already says what the last request got.
      if ((heard === null || held !== undefined) && (await watch.alerts.get(id))?.resolvedAt === null) return;
      const { kind, subject, amount } = describeEffect(effect);
      const draft = sendUnanswered({ kind, subject, cents: amount, currency, forMs, lastAnswer, windowEndsAt: dispatchedAt + target.dedupWindowMs, now });
      // The dispatch it is about (`occurredAt`): a person's resolution of it holds while the passes raise it again, and
      // a later dispatch of the effect left unanswered too opens it again (alerts.ts newerFailure).
      const { alert, created } = await watch.alerts.raise({ ...draft, effectId, subject, occurredAt: dispatchedAt });
      // This pass released its claim before the raise, so another worker may have settled the effect in between and
      // found no alert to resolve. Looked at after the raise, one of the two sees the other: the alert never outlives
      // the open effect.
      if (!(await journal.readState(partition, effectId)).state.open) {
        await watch.alerts.resolve(id, 'recovery: the effect settled while its alert was raised');
        return;
      }
      if (created) logger.warn({ alert: alert.id, effectId, centsAtStake: alert.centsAtStake, action: alert.action }, alert.sentence);
    } catch (error) {
      if (error instanceof ProcessCrash) throw error;
      logger.error({ err: error, alert: id, effectId }, 'could not raise the alert for an effect Stripe has given no answer to; the next recovery pass tries again');
    }
  }

  /**
   * An effect a pass leaves untouched while the effects queue is paused (a pause in force, or a 429 the pass met) is
   * watched all the same: its send_unanswered alert is raised once its dispatch has been open past
   * GateDeps.unanswered.afterMs (watchUnanswered), so however long a pause holds the money, whoever set it, a person
   * hears of it. Only Redis is read, and nothing is claimed or sent. `held`: why nothing is sent, for the alert's text.
   */
  async function watchHeld(effectId: string, partition: string | null, held: string): Promise<void> {
    if (ctx.unanswered === undefined || partition === null) return;
    try {
      const { now, state } = await journal.readState(partition, effectId);
      if (!state.open) return;
      const entries = await journal.entries(partition, effectId);
      const dispatched = openDispatch(entries);
      if (!dispatched) return;
      const effect = parseEffect(dispatchedEffect(entries, dispatched), 'effect', { recorded: true });
      const waiting: Settled = { kind: 'waiting', effectId, until: now, reason: held };
      await watchUnanswered(waiting, partition, effect, currencyOfEffectOrCredit(entries, ctx.unanswered.creditCurrency ?? null), dispatched.at, now, held);
    } catch (error) {
      if (error instanceof ProcessCrash) throw error;
      logger.error({ err: error, effectId }, 'could not look at an effect held by the effects queue\'s pause for its send_unanswered alert; the next recovery pass tries again');
    }
  }

  async function settleClaimed(claim: Claim, holding: Holding, entries: readonly Entry[], dispatched: EntryOf<'DISPATCHED'>, effect: Effect): Promise<Settled> {
    const { epoch } = claim;
    const { partition, effectId } = holding;

    // A landing this process heard while Redis was away (settle.ts commit): committed as it would have been then, if it
    // was heard for this dispatch (the head its sender held is this DISPATCHED or an entry after it).
    const heard = ctx.heard.get(effectId);
    if (heard !== undefined) {
      ctx.heard.delete(effectId);
      const from = entries.findIndex((entry) => entry.hash === dispatched.hash);
      if (from >= 0 && entries.slice(from).some((entry) => entry.hash === heard.head)) return commit(ctx, holding, heard.via, heard.result, heard.rechecked, heard.outcome);
    }
    // A fenced-out sender's definite answer is the truth about the effect (issue 6, item 7).
    if (claim.late === 'landed') {
      const late = lateLanding(entries);
      const landed: JsonObject = late && isJsonObject(late.result) ? late.result : { id: null };
      return commit(ctx, holding, 'late-result', landed, null, 'COMMITTED_ON_QUERY');
    }
    const recoveryTiming: RecoveryTiming = {
      tier: target.tier,
      queryable: target.queryable,
      now: claim.now,
      dispatchedAt: dispatched.at,
      sendDeadline: claim.sendDeadline,
      deathProvenAt: claim.deathProvenAt,
      dedupWindowMs: target.dedupWindowMs,
      dedupMarginMs: timing.dedupMarginMs,
      settleMarginMs: timing.settleMarginMs,
      // A request of this dispatch that got no definite answer: look before resending under the key (planRecovery).
      unknownAnswers: claim.unknowns,
      lastUnknownAt: claim.unknownAt,
      neverSent: claim.neverSent,
    };
    if (claim.late === 'rejected') {
      const late = [...entries].reverse().find((entry): entry is EntryOf<'LATE_RESULT'> => entry.kind === 'LATE_RESULT' && entry.outcome === 'rejected');
      return refusedInRecovery(holding, effect, { message: late?.error ?? 'a fenced-out send was refused outright', code: null, status: null }, null, absenceTrustedAt(recoveryTiming), false, false);
    }
    // What nobody can check is AMBIGUOUS at once, unless no request of the dispatch ever left (planRecovery).
    const mode = recoveryMode(recoveryTiming);
    if (mode.mode === 'ambiguous' && !claim.neverSent) return settleAmbiguous(ctx, holding, mode.reason, null);

    // A re-check that cannot be read sends nothing, but it must not keep a landed effect from being recorded
    // (issue 6, item 8): the lookup still runs.
    let checks: Checks | null = null;
    let recheckError: unknown = null;
    // A lower bound of when the re-check's premise read began (Redis ms; the claim's time, taken before, when the clock
    // has none): a resend is sent on that read only while it is recent (resend-2, premiseMaxAgeMs).
    const readFrom = journal.clock.floor() ?? claim.now;
    try {
      checks = await recheck(effectId, partition, dispatched, effect, holding.attempt ?? '', holding.neverSent === true);
    } catch (error) {
      if (error instanceof ProcessCrash) throw error;
      recheckError = error;
    }
    // A re-check Stripe rate-limited: nothing is sent, and no lookup is made either (another call to an account over
    // its limit); the effect is looked at again after the pause, as a job the queue puts back is (README "Rate limits").
    const recheckLimited = recheckError === null ? null : slowDownOf(recheckError);
    if (recheckLimited !== null) {
      await journal.releaseClaim(partition, effectId, ctx.owner, epoch, 'unsent');
      return { kind: 'unresolved', effectId, outcome: `UNRESOLVED:${errorName(recheckError)}`, error: `the re-check was rate-limited, so nothing was sent: ${quoteError(recheckError)}`, slowDown: recheckLimited };
    }
    let lookup: Lookup = { state: 'not-run' };
    for (let step = 0; step < 4; step += 1) {
      const plan: RecoveryStep = planRecovery(recoveryTiming, checks, lookup);
      switch (plan.do) {
        case 'resend': {
          if (checks === null) break;
          const sent = await resend(holding, dispatched, effect, firstProposal(entries)?.requestId ?? null, checks, plan.outcome, absenceTrustedAt(recoveryTiming), claim.neverSent, claim.unknowns, readFrom);
          if (sent.kind !== 'lease') return sent.settled;
          // The approval died between the re-check and the resend: nothing is sent, and recovery goes on as for
          // any failed re-check (issue 6, item 2).
          checks = checksOf(checks.approval === null ? null : { ...checks.approval, revoked: sent.revoked, revokedAt: sent.revokedAt }, [sent.reason]);
          continue;
        }
        case 'lookup':
          // Nothing of a first dispatch that never sent can have landed (holding.neverSent): what a lookup finds
          // labelled with the effect id is someone else's, never a landing to commit as the effect's own.
          if (holding.neverSent === true) {
            lookup = { state: 'absent' };
            continue;
          }
          try {
            const found = await lookUp(ctx, effectId, effect, holding);
            lookup = found !== null ? { state: 'found', found: objectId(found), object: found } : { state: 'absent' };
          } catch (error) {
            if (error instanceof ProcessCrash) throw error;
            // A lookup that can never tell again: AMBIGUOUS, unless no request of the dispatch ever left (then
            // nothing can have landed, and its absence is known without the lookup).
            if (isBlind(error) && claim.neverSent) {
              lookup = { state: 'absent' };
              continue;
            }
            if (isBlind(error)) return settleAmbiguous(ctx, holding, blindReason(error), checks);
            await journal.releaseClaim(partition, effectId, ctx.owner, epoch, 'unsent');
            const limited = slowDownOf(error);
            return { kind: 'unresolved', effectId, outcome: 'UNRESOLVED:lookup_failed', error: quoteError(error), ...(limited === null ? {} : { slowDown: limited }) };
          }
          continue;
        case 'commit-found': {
          const landed = lookup.state === 'found' && lookup.object ? lookup.object : { id: plan.found };
          return commit(ctx, holding, 'recovery-query', landed, checks, 'COMMITTED_ON_QUERY');
        }
        case 'refuse':
          if (checks === null) break;
          return refuseAtRecovery(ctx, holding, plan.outcome, checks);
        case 'ambiguous':
          return settleAmbiguous(ctx, holding, plan.reason, checks);
        case 'wait':
          await journal.releaseClaim(partition, effectId, ctx.owner, epoch, 'unsent');
          return { kind: 'waiting', effectId, until: plan.until, reason: plan.reason };
        case 'unresolved':
          await journal.releaseClaim(partition, effectId, ctx.owner, epoch, 'unsent');
          return { kind: 'unresolved', effectId, outcome: `UNRESOLVED:${recheckError === null ? 'recheck_failed' : errorName(recheckError)}`, error: recheckError === null ? plan.reason : `${plan.reason}: ${quoteError(recheckError)}` };
        default: {
          const never: never = plan;
          return never;
        }
      }
      break;
    }
    await journal.releaseClaim(partition, effectId, ctx.owner, epoch, 'unsent');
    return { kind: 'unresolved', effectId, outcome: 'UNRESOLVED:no_progress', error: 'recovery did not reach a decision' };
  }

  type Resent = { kind: 'done'; settled: Settled } | { kind: 'lease'; reason: string; revoked: boolean; revokedAt: number | null };

  /**
   * A definite refusal met in recovery (a resend refused, or a fenced-out sender's refusal) settles the effect only once
   * no earlier send of its dispatch can still land: a takeover resends while the dead sender's request may still be
   * running at the target, and a refusal made before the network (the credit target's check that the incident was
   * compensated meanwhile, the refund target's refundable amount) never reaches the idempotency key that would tie the
   * two together. Until `trustedAt` (absenceTrustedAt: the earlier sends' deadline, or their sender's proven death,
   * plus the settle margin) a landing the lookup finds is committed, and nothing found waits, the claim released.
   * After a refused resend the wait is marked like an answer that settled nothing (markUnknown), so the next pass looks
   * before it resends: each resend sets a later deadline, and resending at once on every pass would push the wait on
   * for ever.
   */
  async function refusedInRecovery(holding: Holding, effect: Effect, rejection: { message: string; code: string | null; status: number | null }, checks: Checks | null, trustedAt: number, resent: boolean, neverSent: boolean, nothingLeft = false): Promise<Settled> {
    // No earlier request of this dispatch can have landed, and the target's refusal proves this one did not
    // (settleRejected): nothing of the effect is at the target to look for or wait on.
    if (nothingLeft) return settleRejected(ctx, holding, effect, rejection, checks, { onlyRequest: true, nothingLeft: true });
    // Redis's own time, read now: the estimate errs late, and an early "trusted" is the unsafe side. The refused resend
    // was the dispatch's only request when none left before it (neverSent): a lookup that cannot tell adds nothing.
    if ((await journal.serverTime()) >= trustedAt) return settleRejected(ctx, holding, effect, rejection, checks, { onlyRequest: neverSent });
    const { partition, effectId, epoch } = holding;
    if (target.queryable) {
      let found: JsonObject | null;
      try {
        found = await lookUp(ctx, effectId, effect, holding);
      } catch (error) {
        if (error instanceof ProcessCrash) throw error;
        if (isBlind(error) && !neverSent) return settleAmbiguous(ctx, holding, blindReason(error), checks);
        if (isBlind(error)) return settleRejected(ctx, holding, effect, rejection, checks, { onlyRequest: true });
        await journal.releaseClaim(partition, effectId, ctx.owner, epoch);
        return { kind: 'unresolved', effectId, outcome: 'UNRESOLVED:lookup_failed', error: `the target refused (${quoteError(rejection.message)}) and the lookup for an earlier send that may still land failed: ${quoteError(error)}` };
      }
      if (found !== null) return commit(ctx, holding, 'failed-but-landed', found, checks, 'COMMITTED_ON_QUERY');
    }
    if (resent) await markUnknown(ctx, holding, null);
    await journal.releaseClaim(partition, effectId, ctx.owner, epoch);
    const reason = `the target refused (${quoteError(rejection.message)}), but an earlier send of this dispatch may still land; a lookup that finds nothing is trusted only after the last send stopped plus the settle margin`;
    logger.info({ effectId, until: trustedAt, code: rejection.code }, 'refused in recovery; waiting for any earlier send before settling the refusal');
    return { kind: 'waiting', effectId, until: trustedAt, reason };
  }

  /** `unknownsBefore`: how many requests of the dispatch got no definite answer before this resend (the claim's). */
  async function resend(holding: Holding, dispatched: EntryOf<'DISPATCHED'>, effect: Effect, requestId: string | null, checks: Checks, outcome: 'COMMITTED_BY_RETRY' | 'REAPPLIED_AFTER_QUERY', trustedAt: number, neverSent: boolean, unknownsBefore: number, readFrom: number): Promise<Resent> {
    const { partition, effectId, epoch } = holding;
    const held = await holdBack(ctx, holding, 'unsent');
    if (held !== null) return { kind: 'done', settled: { kind: 'unresolved', effectId, outcome: 'UNRESOLVED:replicas_behind', error: held } };
    const deadlineAt = performance.now() + target.sendTimeoutMs;
    // Under the same idempotency key, the resend must start while the target still remembers the key.
    const notAfter = outcome === 'COMMITTED_BY_RETRY' ? dispatched.at + target.dedupWindowMs - timing.dedupMarginMs : 0;
    // Tier 1 takeover resends while the dead worker's own request might still be in flight. That is safe only
    // because the target dedupes concurrent requests under one key (Stripe answers 409 idempotency_key_in_use to
    // the second while the first runs, and replays the first's answer after): both land as one object.
    const announced = await journal.resend(partition, effectId, { owner: ctx.owner, epoch, approvalId: holding.approvalId }, { sendTimeoutMs: target.sendTimeoutMs, claimTtlMs: timing.claimTtlMs, notAfter, readFrom });
    switch (announced.status) {
      case 'OK':
        break;
      case 'LEASE':
        return { kind: 'lease', reason: announced.reason, revoked: announced.revoked, revokedAt: announced.revokedAt === 0 ? null : announced.revokedAt };
      case 'LATE':
        // A fenced-out sender answered meanwhile; the next pass acts on it.
        return { kind: 'done', settled: { kind: 'skipped', effectId, reason: `a fenced-out sender's answer (${announced.late}) arrived; it is settled next`, holder: ctx.owner, retryAt: 0 } };
      case 'TOO_LATE':
        await journal.releaseClaim(partition, effectId, ctx.owner, epoch, 'unsent');
        return { kind: 'done', settled: { kind: 'skipped', effectId, reason: 'the re-check ran past the idempotency window; the next pass looks the effect up instead', holder: ctx.owner, retryAt: announced.now } };
      case 'STALE_READ':
        await journal.releaseClaim(partition, effectId, ctx.owner, epoch, 'unsent');
        return { kind: 'done', settled: { kind: 'skipped', effectId, reason: `the re-check's premise read was more than ${premiseMaxAgeMs(2 * target.sendTimeoutMs)} ms old at the resend (the re-check's read and the lookup took that long, or this worker stalled); nothing was sent, and the next pass reads the premises again`, holder: ctx.owner, retryAt: announced.now } };
      case 'NOT_OPEN':
      case 'FENCED':
        return { kind: 'done', settled: { kind: 'skipped', effectId, reason: `the claim moved before the resend (${announced.status})` } };
      default: {
        const never: never = announced;
        return never;
      }
    }
    const sent = await sendOnce(ctx, holding, effect, requestId, deadlineAt);
    if ('landed' in sent) return { kind: 'done', settled: await commit(ctx, holding, outcome === 'COMMITTED_BY_RETRY' ? 'retry-idempotent' : 'recovery-reapply', sent.landed, checks, outcome) };
    if ('rejected' in sent) return { kind: 'done', settled: await refusedInRecovery(holding, effect, rejectionOf(sent.rejected), checks, trustedAt, true, neverSent, holding.neverSent === true && target.refusalProvesNothingLanded === true) };
    const why = 'fenced' in sent ? sent.fenced : quoteError(sent.unknown);
    // A resend fenced by a read the target made before writing carries that read's error (SendResult `cause`): its 429
    // pauses the passes as one on the resend does.
    const slowDown = slowDownOf('unknown' in sent ? sent.unknown : sent.cause);
    // A 429 is no unknown outcome of this request: Stripe's rate limiter answers before its idempotency layer, so the
    // request did nothing and nothing is stored under the key (stripe-facts §3). The effect stands as it stood before
    // the resend (an earlier request of the dispatch may still have landed): the claim stays, nothing is settled or
    // marked, and it is resent under the same key after the pause. Whoever asked pauses and logs that once per pause
    // (the effects queue, recover() below), not once per effect.
    if (slowDown !== null) logger.debug({ effectId, error: why }, 'resend rate-limited (429: not processed); the claim stays, and it is resent under the same key after the pause');
    else logger.warn({ effectId, error: why }, 'fenced' in sent ? 'the resend sent nothing; the claim stays until it lapses' : 'resend outcome unknown; the claim stays until it lapses');
    if ('unknown' in sent) await markUnknown(ctx, holding, slowDown);
    // Stripe may still be running an earlier request under the key (409 idempotency_key_in_use: the dead sender's), or
    // answered this one where nobody heard: a pass looks the effect up again soon, later after each such answer (the
    // claim is this worker's, taken back at once), not at the next periodic pass a minute on. A rate limit pauses
    // instead, and a pass looks again once its pause ends (recover()).
    const retryAt = 'unknown' in sent && slowDown === null ? announced.now + resendRetryMs(unknownsBefore) : undefined;
    // A resend fenced by a refused key (the target's read before it, or the write itself: nothing was sent, and nothing
    // is marked) is named for it, as a re-check whose read Stripe refused the key for is (UNRESOLVED:target_misconfigured).
    const misconfigured = 'fenced' in sent && sent.cause instanceof InterlockError && sent.cause.code === 'target_misconfigured';
    return { kind: 'done', settled: { kind: 'unresolved', effectId, outcome: `UNRESOLVED:${'fenced' in sent ? (misconfigured ? 'target_misconfigured' : 'fenced') : errorName(sent.unknown)}`, error: why, ...(slowDown === null ? {} : { slowDown }), ...(retryAt === undefined ? {} : { retryAt }) } };
  }

  /**
   * A pass honours Stripe's rate limit as the effects queue does (README "Rate limits"): while the deployment's pause
   * lasts (`rateLimit`, the effects queue's) it calls Stripe for nothing and looks again once the pause ends; and the
   * first call of a pass Stripe answers 429 pauses every worker and ends the pass's calls: the effects after it are
   * left, untouched, for the pass at the pause's end. Without `rateLimit` (`interlock recover`, a library's loop) the
   * pass still stops at the first 429, and says to look again after Retry-After or RATE_LIMIT_BACKOFF_MS.
   */
  async function recover(options: { only?: readonly string[]; requeue?: Requeue; rateLimit?: RateLimitPause } = {}): Promise<RecoveryReport> {
    const report: RecoveryReport = { settled: [], waiting: [], skipped: [], unresolved: [], nextAt: null };
    // A worker superseded under its id takes no claims: it could send none of them, and each one it took would only
    // hold the claim away from the worker that can, for a pass.
    if (heartbeat.supersededBy() !== null) return report;
    const { rateLimit } = options;
    // Unreadable (Redis not answering), it is taken for none: the pass then fails on Redis as it would have.
    const paused: PauseLeft = rateLimit === undefined ? { ms: 0 } : await rateLimit.remaining().catch(() => ({ ms: 0 }));
    if (paused.ms > 0) {
      const until = (await journal.serverTime()) + paused.ms;
      const reason = pausedReason(paused, until);
      // What the pass would have looked at is still listed, with why and until when (only Redis is read: Stripe is not
      // called), so a report during the pause does not read as nothing open; and each open dispatch is watched for
      // its send_unanswered alert (watchHeld), which no pause holds back.
      const waiting = options.only ? await Promise.all(options.only.map(async (effectId) => ({ effectId, partition: isEffectId(effectId) ? await journal.partitionOf(effectId) : null }))) : groupByEffect(await journal.openEffects());
      for (const { effectId, partition } of waiting) {
        report.skipped.push({ effectId, reason, retryAt: until });
        await watchHeld(effectId, partition, `${reason} (until ${new Date(until).toISOString()})`);
      }
      report.nextAt = until;
      return report;
    }
    /** Once a call of this pass met a 429: until when the pause lasts (Redis ms), and which effect met it. */
    let limited: { until: number; pauseMs: number; effectId: string } | null = null;
    let leftForLater = 0;
    const pauseFor = async (slowDown: SlowDown, effectId: string) => {
      const pauseMs = Math.max(50, slowDown.retryAfterMs ?? rateLimit?.backoffMs ?? RATE_LIMIT_BACKOFF_MS);
      try {
        await rateLimit?.pause(pauseMs);
      } catch (error) {
        logger.warn({ err: error, pauseMs }, "could not pause the effects queue for Stripe's rate limit; this pass stops its calls all the same");
      }
      return { until: (await journal.serverTime()) + pauseMs, pauseMs, effectId };
    };
    const candidates: { effectId: string; partition: string | null; indexed: Indexed[] }[] = options.only
      ? await Promise.all(options.only.map(async (effectId) => ({ effectId, partition: isEffectId(effectId) ? await journal.partitionOf(effectId) : null, indexed: [] })))
      : groupByEffect(await journal.openEffects());
    const wake = (at: number) => {
      report.nextAt = report.nextAt === null ? at : Math.min(report.nextAt, at);
    };
    for (const { effectId, partition, indexed } of candidates) {
      if (limited !== null) {
        leftForLater += 1;
        const reason = 'Stripe rate-limited this pass (429): it sends nothing more, and looks at this effect once the pause ends';
        report.skipped.push({ effectId, reason, retryAt: limited.until });
        wake(limited.until);
        await watchHeld(effectId, partition, `${reason} (until ${new Date(limited.until).toISOString()})`);
        continue;
      }
      let one: Settled;
      try {
        one = partition === null ? { kind: 'skipped', effectId, reason: isEffectId(effectId) ? 'unknown effect id' : 'not an effect id (64 lowercase hex characters)' } : await recoverOne(effectId, partition, indexed, options.requeue);
      } catch (error) {
        if (error instanceof ProcessCrash) throw error;
        one = { kind: 'unresolved', effectId, outcome: `UNRESOLVED:${errorName(error)}`, error: quoteError(error) };
      }
      if (one.kind === 'unresolved' && one.slowDown !== undefined) {
        limited = await pauseFor(one.slowDown, effectId);
        one = { ...one, retryAt: limited.until };
      }
      switch (one.kind) {
        case 'settled':
          report.settled.push({ effectId, outcome: one.outcome, sentence: explainRecorded(one.outcome, one.reason) });
          break;
        case 'waiting':
          report.waiting.push({ effectId, until: one.until, reason: one.reason });
          wake(one.until);
          break;
        case 'skipped': {
          const skipped: RecoveryReport['skipped'][number] = { effectId, reason: one.reason };
          if (one.holder !== undefined) skipped.holder = one.holder;
          if (one.retryAt !== undefined) {
            skipped.retryAt = one.retryAt;
            wake(one.retryAt);
          }
          report.skipped.push(skipped);
          break;
        }
        case 'unresolved':
          report.unresolved.push({ effectId, outcome: one.outcome, error: one.error, ...(one.retryAt === undefined ? {} : { retryAt: one.retryAt }) });
          if (one.retryAt !== undefined) wake(one.retryAt);
          break;
        default: {
          const never: never = one;
          return never;
        }
      }
    }
    if (limited !== null) logRateLimited(undefined, { effectId: limited.effectId, pauseMs: limited.pauseMs, leftForLater });
    // The effect whose 429 stopped the pass is the line above's; this line is for what else the pass did.
    const rateLimited = limited === null ? 0 : 1;
    if (report.settled.length + report.unresolved.length + report.waiting.length - rateLimited > 0) logger.info({ settled: report.settled.length, waiting: report.waiting.length, skipped: report.skipped.length, unresolved: report.unresolved.length, ...(limited === null ? {} : { rateLimited: leftForLater + 1 }) }, 'recovery pass');
    return report;
  }

  return { recover, recoverOne };
}

/**
 * Why a pass during the effects queue's pause sends nothing. A pause longer than the service sets is not Stripe's
 * (PauseLeft `setByHand`): the report says so rather than blame a 429 nobody met.
 */
function pausedReason(paused: PauseLeft, until: number): string {
  if (paused.setByHand === undefined) return 'Stripe is rate-limiting this deployment (429): nothing is sent until the pause ends, and it is looked at then';
  const { leftMs, key } = paused.setByHand;
  return `the effects queue's rate-limit key (${key}) held a pause of ${roughly(leftMs)}, longer than any the service sets, so no 429 set it (someone did, by hand: the error log says how to clear it); it is honoured only until ${new Date(until).toISOString()}, and this effect is looked at then`;
}

/**
 * Why the subject's cap in force stops an open dispatch's resend, or null when it does not: `cap` is its limit and what
 * the gate has moved or has in flight on the subject, this dispatch's own `amount` among it (reserved at dispatch, until
 * it settles), so a limit below that total is one the effect no longer fits. Amounts in cents of `currency` (null: not
 * known). No cap set (null) stops nothing.
 */
function subjectCapProblem(subject: string, cap: { limitCents: number | null; movedCents: number }, amount: number, currency: string | null): string | null {
  if (cap.limitCents === null || cap.movedCents <= cap.limitCents) return null;
  const money = (cents: number) => amountText(cents, currency);
  return `${CAP_AT_RECOVERY_PREFIX}${subject} now allows ${money(cap.limitCents)} and ${money(cap.movedCents)} are moved or in flight there, this effect's ${money(amount)} among them, so sending it would pass the cap`;
}

/** A duration in ms as a person reads it: whole minutes, or whole hours past two of them. */
function roughly(ms: number): string {
  return ms >= 2 * 3_600_000 ? `${Math.round(ms / 3_600_000)} h` : `${Math.max(1, Math.round(ms / 60_000))} min`;
}

/** One entry of the open index ("<effect id>:<token>") and when its binding was made (Redis ms). */
type Indexed = { entry: string; boundAt: number };

/**
 * Queues the effect's latest proposal if it stands unjudged; answers whether it did. Throws when it could not tell
 * or could not queue.
 */
export type Requeue = (effectId: string, partition: string) => Promise<boolean>;

/** Index entries, one per submit, as the effects they name (oldest first). */
function groupByEffect(open: readonly OpenEffect[]): { effectId: string; partition: string | null; indexed: Indexed[] }[] {
  const byEffect = new Map<string, { effectId: string; partition: string | null; indexed: Indexed[] }>();
  for (const item of open) {
    const indexed = { entry: item.entry, boundAt: item.boundAt };
    const known = byEffect.get(item.effectId);
    if (known) known.indexed.push(indexed);
    else byEffect.set(item.effectId, { effectId: item.effectId, partition: item.partition, indexed: [indexed] });
  }
  return [...byEffect.values()];
}
