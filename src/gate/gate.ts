// The gate: submit() and recover() over a target, the Redis journal and the approvals store (DESIGN §3, §7).
// Decisions come from src/core; this module only sequences reads, atomic scripts and the send.
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { approvalProblems } from '../core/approval.js';
import { committedEntry, dispatchBlocker, firstProposal, openDispatch, planRecovery, premisesDecidedOn, recoveryMode, timingProblems, type Lookup, type RecoveryStep, type RecoveryTiming } from '../core/decisions.js';
import { effectIdFor, payloadHash } from '../core/effect-id.js';
import type { ApprovalSnapshot, Checks, CommitVia, Entry, EntryOf, PremiseChange } from '../core/entries.js';
import type { Json, JsonObject } from '../core/json.js';
import { explainOutcome, type Outcome } from '../core/outcomes.js';
import { ProcessCrash, Rejected, objectId, type Target } from '../core/target.js';
import { outcomeOf } from '../core/verify.js';
import type { Approvals } from '../redis/approvals.js';
import type { Heartbeat } from '../redis/heartbeat.js';
import type { Journal } from '../redis/journal.js';
import { parseProposal, ProposalError } from './proposal.js';
import type { SendWatchdog } from './send-watchdog.js';
import { assertPartition } from '../redis/keys.js';

export type GateTiming = {
  /** How long a claim lasts without its holder settling it; must exceed the target's send timeout. */
  claimTtlMs: number;
  /** Extra time after a send deadline before a lookup that finds nothing is believed. */
  settleMarginMs: number;
  /** Tier 1 falls back to lookup this long before the target forgets an idempotency key. */
  dedupMarginMs: number;
};

export type GateResult = {
  effectId: string;
  outcome: Outcome;
  sentence: string;
  reason?: string;
  evidence?: string | null;
  changes?: PremiseChange[];
  /** IN_FLIGHT: who holds the effect and when to ask again (Redis clock, ms). */
  holder?: string;
  retryAt?: number;
  /** IN_FLIGHT: how long to wait before asking again, from the Redis clock when the answer was made. */
  retryAfterMs?: number;
};

export type RecoveryReport = {
  settled: { effectId: string; outcome: Outcome; sentence: string }[];
  waiting: { effectId: string; until: number; reason: string }[];
  skipped: { effectId: string; reason: string; holder?: string; retryAt?: number }[];
  unresolved: { effectId: string; outcome: Outcome; error: string }[];
  /** The earliest instant (Redis clock) at which recovery has more to do, or null. */
  nextAt: number | null;
};

type RecoverOne =
  | { kind: 'settled'; effectId: string; outcome: Outcome; evidence?: string | null; reason?: string; changes?: PremiseChange[] }
  | { kind: 'waiting'; effectId: string; until: number; reason: string }
  | { kind: 'skipped'; effectId: string; reason: string; holder?: string; retryAt?: number }
  | { kind: 'unresolved'; effectId: string; outcome: Outcome; error: string };

export class PremiseReadError extends Error {
  readonly code = 'premise_read_failed';
  readonly retryable = true;
  constructor(effectId: string, cause: unknown) {
    super(`Could not re-read the premises of effect ${effectId} (${cause instanceof Error ? cause.message : String(cause)}); nothing was sent. Retry when the target answers.`, { cause });
    this.name = 'PremiseReadError';
  }
}

export type Gate = ReturnType<typeof createGate>;

export type GateDeps = {
  journal: Journal;
  approvals: Approvals;
  heartbeat: Heartbeat;
  target: Target;
  timing: GateTiming;
  logger: Logger;
  /** Kills the process when a send outlives its deadline because the event loop stalled (send-watchdog.ts). */
  watchdog?: SendWatchdog;
};

function errorName(error: unknown): string {
  if (!(error instanceof Error)) return 'unknown_error';
  const code: unknown = (error as Error & { code?: unknown }).code;
  return typeof code === 'string' && code.length > 0 ? code : error.name;
}

export function createGate(deps: GateDeps) {
  const { journal, approvals, heartbeat, target, timing, logger } = deps;
  const owner = heartbeat.workerId;
  const nonce = heartbeat.nonce;
  const problems = timingProblems({ ...timing, sendTimeoutMs: target.sendTimeoutMs, dedupWindowMs: target.dedupWindowMs });
  if (problems.length > 0) throw new Error(`The gate's timing is unsafe for target ${target.name}: ${problems.join('; ')}.`);

  // Effects this instance is dispatching, sending or recovering right now, with how many of its calls are. Its own
  // recovery pass or a duplicate job must treat them as held by a live sender, not as its leftovers to resend.
  const busy = new Map<string, number>();
  const hold = (effectId: string) => busy.set(effectId, (busy.get(effectId) ?? 0) + 1);
  const release = (effectId: string) => {
    const left = (busy.get(effectId) ?? 1) - 1;
    if (left > 0) busy.set(effectId, left);
    else busy.delete(effectId);
  };

  function result(effectId: string, outcome: Outcome, extra: Omit<GateResult, 'effectId' | 'outcome' | 'sentence'> = {}): GateResult {
    return { effectId, outcome, sentence: explainOutcome(outcome), ...extra };
  }

  function checksOf(snapshot: ApprovalSnapshot | null, approvalIssues: string[], violations: string[] = [], changes: PremiseChange[] = []): Checks {
    return { approvalLive: snapshot !== null && approvalIssues.length === 0, approval: snapshot, approvalProblems: approvalIssues, violations, changes };
  }

  async function readPremises(effectId: string, effect: JsonObject, premises: JsonObject) {
    try {
      return await target.readPremises(effectId, effect, premises);
    } catch (error) {
      throw new PremiseReadError(effectId, error);
    }
  }

  async function refuse(partition: string, effectId: string, code: Extract<Outcome, `REFUSED:${string}`>, reason: string, checks: Checks | null, changes: PremiseChange[] = []): Promise<GateResult> {
    await journal.append(partition, effectId, { kind: 'REFUSED', code, reason, checks, rechecked: null, changes, resolves: false });
    logger.info({ effectId, outcome: code, reason }, 'refused');
    return result(effectId, code, { reason, changes });
  }

  /** Records a landed result from a sender that lost its claim: evidence, never a commit (it was fenced out). */
  async function recordLate(partition: string, effectId: string, epoch: number, outcome: 'landed' | 'rejected' | 'unknown', payload: Json, error: string | null): Promise<void> {
    await journal.append(partition, effectId, { kind: 'LATE_RESULT', owner, epoch, outcome, result: payload, error });
    logger.warn({ effectId, epoch, outcome }, 'late result from a fenced-out send recorded');
  }

  async function settledOutcome(partition: string, effectId: string): Promise<GateResult> {
    const entries = await journal.entries(partition, effectId);
    const outcome = outcomeOf(entries);
    if (outcome === null || openDispatch(entries)) {
      const { state } = await journal.readState(partition, effectId);
      return result(effectId, 'IN_FLIGHT', { holder: state.owner, retryAt: state.claimExpires });
    }
    // Someone else settled it: their commit is, for this caller, a duplicate (two callers never both hear COMMITTED).
    const committed = committedEntry(entries);
    if (committed) return result(effectId, 'DUPLICATE_IGNORED', { evidence: committed.found });
    return result(effectId, outcome as Outcome);
  }

  /** Commits what landed, or records it as late when someone else now holds the effect. */
  async function commit(partition: string, effectId: string, epoch: number, via: CommitVia, landed: JsonObject, rechecked: Checks | null, outcome: Outcome): Promise<RecoverOne> {
    const found = objectId(landed);
    const reply = await journal.settle(partition, effectId, epoch, { kind: 'COMMITTED', via, result: landed, found, rechecked, epoch });
    if (reply.status !== 'OK') {
      await recordLate(partition, effectId, epoch, 'landed', landed, null);
      return { kind: 'skipped', effectId, reason: `the send landed but the claim had moved on (${reply.status}); recorded as LATE_RESULT` };
    }
    logger.info({ effectId, outcome, via, found }, 'committed');
    return { kind: 'settled', effectId, outcome, evidence: found };
  }

  /**
   * After a definite refusal, looks once more: a refusal can hide an earlier attempt that did land (for Stripe, a
   * resend refused because the refund already exists). Only then is the effect settled as a target error.
   */
  async function settleRejected(partition: string, effectId: string, epoch: number, effect: JsonObject, rejection: Rejected, rechecked: Checks | null): Promise<RecoverOne> {
    if (target.queryable) {
      let found: JsonObject | null;
      try {
        found = await target.query(effectId, effect);
      } catch (error) {
        return { kind: 'unresolved', effectId, outcome: `UNRESOLVED:lookup_failed`, error: `the target refused (${rejection.message}) and the lookup that would confirm nothing landed failed: ${String(error)}` };
      }
      if (found) return commit(partition, effectId, epoch, 'failed-but-landed', found, rechecked, 'COMMITTED_ON_QUERY');
    }
    const reason = `the target refused: ${rejection.message}`;
    const reply = await journal.settle(partition, effectId, epoch, { kind: 'REFUSED', code: 'REFUSED:target_error', reason, checks: null, rechecked, changes: [], resolves: true });
    if (reply.status !== 'OK') {
      await recordLate(partition, effectId, epoch, 'rejected', { code: rejection.details.code, status: rejection.details.status }, rejection.message);
      return { kind: 'skipped', effectId, reason: 'the target refused but the claim had moved on; recorded as LATE_RESULT' };
    }
    logger.info({ effectId, code: rejection.details.code }, 'target refused');
    return { kind: 'settled', effectId, outcome: 'REFUSED:target_error', reason };
  }

  /** One bounded send of the recorded payload. `deadlineAt` is on the local monotonic clock. */
  async function send(effectId: string, effect: JsonObject, deadlineAt: number): Promise<{ landed: JsonObject } | { rejected: Rejected } | { unknown: unknown }> {
    const remaining = Math.floor(deadlineAt - performance.now());
    if (remaining <= 0) return { unknown: new Error('the send deadline passed before the request could start') };
    const disarm = deps.watchdog?.arm(deadlineAt);
    try {
      return { landed: await target.apply(effectId, effect, { signal: AbortSignal.timeout(remaining) }) };
    } catch (error) {
      if (error instanceof ProcessCrash) throw error;
      if (error instanceof Rejected) return { rejected: error };
      return { unknown: error };
    } finally {
      disarm?.();
    }
  }

  function toGateResult(one: RecoverOne, partition: string): Promise<GateResult> | GateResult {
    switch (one.kind) {
      case 'settled': {
        const extra: Omit<GateResult, 'effectId' | 'outcome' | 'sentence'> = {};
        if (one.evidence !== undefined) extra.evidence = one.evidence;
        if (one.reason !== undefined) extra.reason = one.reason;
        if (one.changes !== undefined) extra.changes = one.changes;
        return result(one.effectId, one.outcome, extra);
      }
      case 'waiting':
        return result(one.effectId, 'IN_FLIGHT', { holder: 'recovery', retryAt: one.until, reason: one.reason });
      case 'skipped':
        if (one.holder !== undefined) return result(one.effectId, 'IN_FLIGHT', { holder: one.holder, retryAt: one.retryAt ?? 0, reason: one.reason });
        return settledOutcome(partition, one.effectId);
      case 'unresolved':
        return result(one.effectId, one.outcome, { reason: one.error });
      default: {
        const never: never = one;
        return never;
      }
    }
  }

  /** The effect's subject and amount, read before anything is written; a malformed effect is bad input. */
  function describeEffect(effect: JsonObject): { subject: string; amount: number } {
    try {
      return { subject: assertPartition(target.subjectOf(effect)), amount: target.amountOf(effect) };
    } catch (error) {
      throw new ProposalError(`The effect is invalid for target ${target.name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  async function submit(input: unknown): Promise<GateResult> {
    const proposal = parseProposal(input);
    const { effect, approval } = proposal;
    const effectId = effectIdFor({ requestId: proposal.requestId, effect });
    const { subject, amount } = describeEffect(effect);
    const partition = await journal.bindPartition(effectId, subject);
    const hash = payloadHash(effect);

    for (let attempt = 0; attempt < 5; attempt += 1) {
      const entries = await journal.entries(partition, effectId);
      const first = firstProposal(entries);
      if (first && payloadHash(first.effect) !== hash) {
        await journal.append(partition, effectId, proposedDraft(proposal, proposal.premises));
        return refuse(partition, effectId, 'REFUSED:conflicting_payload', 'this request id was first decided with another payload; the recorded payload stands', null);
      }
      const blocker = dispatchBlocker(entries, effect);
      if (blocker === 'in_flight') return toGateResult(await recoverOne(effectId, partition), partition);
      if (blocker === 'committed') return result(effectId, 'DUPLICATE_IGNORED', { evidence: committedEntry(entries)?.found ?? null });
      if (blocker === 'ambiguous') return result(effectId, 'AMBIGUOUS');
      if (blocker === 'target_error') return settledOutcome(partition, effectId);

      const decidedOn = premisesDecidedOn(entries, approval, proposal.premises);
      await journal.append(partition, effectId, proposedDraft(proposal, proposal.premises), { payloadHash: hash });

      const { now, snapshot } = await approvals.describe(approval);
      const leaseIssues = approvalProblems(snapshot, { now, subject: partition, amount, phase: 'dispatch' });
      if (snapshot === null || leaseIssues.length > 0) {
        return refuse(partition, effectId, 'REFUSED:lease', leaseIssues.join('; '), checksOf(snapshot, leaseIssues));
      }
      await journal.append(partition, effectId, { kind: 'AUTHORIZED', approval: snapshot });

      const report = await readPremises(effectId, effect, decidedOn);
      const checks = checksOf(snapshot, [], report.violations, report.changes);
      if (report.violations.length > 0) {
        return refuse(partition, effectId, 'REFUSED:stale_premise', report.violations.join('; '), checks, report.changes);
      }

      // The stopwatch starts before the dispatch script, so the recorded deadline is never earlier than the abort.
      const deadlineAt = performance.now() + target.sendTimeoutMs;
      hold(effectId);
      const reply = await journal.dispatch({
        effectId,
        partition,
        payloadHash: hash,
        owner,
        nonce,
        claimTtlMs: timing.claimTtlMs,
        sendTimeoutMs: target.sendTimeoutMs,
        amount,
        approvalId: approval,
        draft: ({ epoch, sendDeadline }) => ({ kind: 'DISPATCHED', effect, approval, premises: decidedOn, checks, owner, epoch, sendDeadline }),
      }).catch((error: unknown) => {
        release(effectId);
        throw error;
      });
      if (reply.status !== 'OK') release(effectId);
      switch (reply.status) {
        case 'OK':
          try {
            return toGateResult(await sendDispatched(partition, effectId, effect, reply.epoch, deadlineAt), partition);
          } finally {
            release(effectId);
          }
        case 'IN_FLIGHT':
        case 'CONFLICTING_PAYLOAD':
        case 'COMMITTED':
        case 'AMBIGUOUS':
        case 'TARGET_ERROR':
          continue;
        case 'LEASE':
          return refuse(partition, effectId, 'REFUSED:lease', reply.reason, checksOf(snapshot, [reply.reason], report.violations, report.changes));
        case 'OVER_CAP':
          return refuse(partition, effectId, 'REFUSED:over_cap', `${reply.cap} allows ${reply.limit} cents and ${reply.reserved} are already reserved; ${amount} more would pass it`, checks);
        default: {
          const never: never = reply;
          return never;
        }
      }
    }
    return settledOutcome(partition, effectId);
  }

  async function sendDispatched(partition: string, effectId: string, effect: JsonObject, epoch: number, deadlineAt: number): Promise<RecoverOne> {
    const sent = await send(effectId, effect, deadlineAt);
    if ('landed' in sent) return commit(partition, effectId, epoch, 'send', sent.landed, null, 'COMMITTED');
    if ('rejected' in sent) return settleRejected(partition, effectId, epoch, effect, sent.rejected, null);
    logger.warn({ effectId, error: String(sent.unknown) }, 'send outcome unknown; the claim stays for recovery');
    const { now } = await journal.readState(partition, effectId);
    return { kind: 'skipped', effectId, reason: `the send's outcome is unknown (${errorName(sent.unknown)}); recovery will settle it`, holder: owner, retryAt: now };
  }

  async function recheck(effectId: string, partition: string, dispatched: EntryOf<'DISPATCHED'>): Promise<Checks> {
    const { now, snapshot } = await approvals.describe(dispatched.approval);
    const leaseIssues = approvalProblems(snapshot, { now, subject: partition, amount: target.amountOf(dispatched.effect), phase: 'recovery' });
    if (snapshot === null || leaseIssues.length > 0) return checksOf(snapshot, leaseIssues);
    const report = await readPremises(effectId, dispatched.effect, dispatched.premises);
    return checksOf(snapshot, [], report.violations, report.changes);
  }

  async function takeClaim(effectId: string, partition: string): Promise<{ epoch: number; now: number; sendDeadline: number } | RecoverOne> {
    const { now, state } = await journal.readState(partition, effectId);
    if (!state.open) return { kind: 'skipped', effectId, reason: 'no open dispatch (settled meanwhile)' };
    let reason: 'own' | 'expired' | 'owner-dead';
    if (state.owner === owner && state.nonce === nonce) {
      if (busy.has(effectId)) return { kind: 'skipped', effectId, reason: 'held by a live sender (this worker)', holder: owner, retryAt: state.claimExpires };
      reason = 'own';
    } else if (state.claimExpires <= now) reason = 'expired';
    else if (!(await heartbeat.isAlive(state.owner, state.nonce))) reason = 'owner-dead';
    else return { kind: 'skipped', effectId, reason: 'held by a live sender', holder: state.owner, retryAt: state.claimExpires };
    const taken = await journal.takeOver(partition, effectId, { epoch: state.epoch, owner: state.owner, nonce: state.nonce }, { owner, nonce, claimTtlMs: timing.claimTtlMs }, reason);
    switch (taken.status) {
      case 'OK':
        if (reason !== 'own') logger.info({ effectId, from: state.owner, reason, epoch: taken.epoch }, 'took over an open dispatch');
        return { epoch: taken.epoch, now: taken.now, sendDeadline: taken.sendDeadline };
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

  async function recoverOne(effectId: string, knownPartition?: string): Promise<RecoverOne> {
    const partition = knownPartition ?? (await journal.partitionOf(effectId));
    if (partition === null) return { kind: 'skipped', effectId, reason: 'unknown effect id' };
    const claim = await takeClaim(effectId, partition);
    if ('kind' in claim) return claim;
    hold(effectId);
    try {
      return await recoverClaimed(effectId, partition, claim);
    } finally {
      release(effectId);
    }
  }

  async function recoverClaimed(effectId: string, partition: string, claim: { epoch: number; now: number; sendDeadline: number }): Promise<RecoverOne> {
    const { epoch } = claim;
    const entries: Entry[] = await journal.entries(partition, effectId);
    const dispatched = openDispatch(entries);
    if (!dispatched) {
      await journal.releaseClaim(partition, effectId, owner, epoch);
      return { kind: 'skipped', effectId, reason: 'no open dispatch in the chain' };
    }
    const recoveryTiming: RecoveryTiming = {
      tier: target.tier,
      queryable: target.queryable,
      now: claim.now,
      dispatchedAt: dispatched.at,
      sendDeadline: claim.sendDeadline,
      dedupWindowMs: target.dedupWindowMs,
      dedupMarginMs: timing.dedupMarginMs,
      settleMarginMs: timing.settleMarginMs,
    };
    const mode = recoveryMode(recoveryTiming);
    if (mode.mode === 'ambiguous') return settleAmbiguous(partition, effectId, epoch, mode.reason, null);

    let checks: Checks;
    try {
      checks = await recheck(effectId, partition, dispatched);
    } catch (error) {
      await journal.releaseClaim(partition, effectId, owner, epoch);
      return { kind: 'unresolved', effectId, outcome: `UNRESOLVED:${errorName(error)}`, error: String(error instanceof Error ? error.message : error) };
    }
    let lookup: Lookup = { state: 'not-run' };
    for (let step = 0; step < 3; step += 1) {
      const plan: RecoveryStep = planRecovery(recoveryTiming, checks, lookup);
      switch (plan.do) {
        case 'resend':
          return resend(partition, effectId, epoch, dispatched, checks, plan.outcome);
        case 'lookup':
          try {
            const found = await target.query(effectId, dispatched.effect);
            const id = found ? objectId(found) : null;
            lookup = found && id !== null ? { state: 'found', found: id, object: found } : { state: 'absent' };
          } catch (error) {
            await journal.releaseClaim(partition, effectId, owner, epoch);
            return { kind: 'unresolved', effectId, outcome: 'UNRESOLVED:lookup_failed', error: String(error instanceof Error ? error.message : error) };
          }
          continue;
        case 'commit-found': {
          const landed = lookup.state === 'found' && lookup.object ? lookup.object : { id: plan.found };
          return commit(partition, effectId, epoch, 'recovery-query', landed, checks, 'COMMITTED_ON_QUERY');
        }
        case 'refuse': {
          const reason = plan.outcome === 'REFUSED:lease_at_recovery' ? checks.approvalProblems.join('; ') : checks.violations.join('; ');
          const reply = await journal.settle(partition, effectId, epoch, { kind: 'REFUSED', code: plan.outcome, reason, checks: null, rechecked: checks, changes: checks.changes, resolves: true });
          if (reply.status !== 'OK') return { kind: 'skipped', effectId, reason: `settled by someone else (${reply.status})` };
          logger.info({ effectId, outcome: plan.outcome, reason }, 'refused at recovery');
          return { kind: 'settled', effectId, outcome: plan.outcome, reason, changes: checks.changes };
        }
        case 'ambiguous':
          return settleAmbiguous(partition, effectId, epoch, plan.reason, checks);
        case 'wait':
          await journal.releaseClaim(partition, effectId, owner, epoch);
          return { kind: 'waiting', effectId, until: plan.until, reason: plan.reason };
        default: {
          const never: never = plan;
          return never;
        }
      }
    }
    await journal.releaseClaim(partition, effectId, owner, epoch);
    return { kind: 'unresolved', effectId, outcome: 'UNRESOLVED:no_progress', error: 'recovery did not reach a decision' };
  }

  async function settleAmbiguous(partition: string, effectId: string, epoch: number, reason: string, rechecked: Checks | null): Promise<RecoverOne> {
    const reply = await journal.settle(partition, effectId, epoch, { kind: 'AMBIGUOUS', reason, rechecked, epoch });
    if (reply.status !== 'OK') return { kind: 'skipped', effectId, reason: `settled by someone else (${reply.status})` };
    logger.warn({ effectId, reason }, 'ambiguous');
    return { kind: 'settled', effectId, outcome: 'AMBIGUOUS', reason };
  }

  async function resend(partition: string, effectId: string, epoch: number, dispatched: EntryOf<'DISPATCHED'>, checks: Checks, outcome: 'COMMITTED_BY_RETRY' | 'REAPPLIED_AFTER_QUERY'): Promise<RecoverOne> {
    const effect = dispatched.effect;
    const deadlineAt = performance.now() + target.sendTimeoutMs;
    // Under the same idempotency key, the resend must start while the target still remembers the key.
    const notAfter = outcome === 'COMMITTED_BY_RETRY' ? dispatched.at + target.dedupWindowMs - timing.dedupMarginMs : 0;
    const announced = await journal.resend(partition, effectId, { owner, epoch }, { sendTimeoutMs: target.sendTimeoutMs, claimTtlMs: timing.claimTtlMs, notAfter });
    if (announced.status === 'TOO_LATE') {
      await journal.releaseClaim(partition, effectId, owner, epoch);
      return { kind: 'skipped', effectId, reason: 'the re-check ran past the idempotency window; the next pass looks the effect up instead', holder: owner, retryAt: announced.now };
    }
    if (announced.status !== 'OK') return { kind: 'skipped', effectId, reason: `the claim moved before the resend (${announced.status})` };
    const sent = await send(effectId, effect, deadlineAt);
    if ('landed' in sent) return commit(partition, effectId, epoch, outcome === 'COMMITTED_BY_RETRY' ? 'retry-idempotent' : 'recovery-reapply', sent.landed, checks, outcome);
    if ('rejected' in sent) return settleRejected(partition, effectId, epoch, effect, sent.rejected, checks);
    logger.warn({ effectId, error: String(sent.unknown) }, 'resend outcome unknown; the claim stays until it lapses');
    return { kind: 'unresolved', effectId, outcome: `UNRESOLVED:${errorName(sent.unknown)}`, error: String(sent.unknown instanceof Error ? sent.unknown.message : sent.unknown) };
  }

  async function recover(options: { only?: readonly string[] } = {}): Promise<RecoveryReport> {
    const report: RecoveryReport = { settled: [], waiting: [], skipped: [], unresolved: [], nextAt: null };
    const candidates = options.only
      ? await Promise.all(options.only.map(async (effectId) => ({ effectId, partition: await journal.partitionOf(effectId) })))
      : (await journal.openEffects()).map(({ effectId, partition }) => ({ effectId, partition }));
    const wake = (at: number) => {
      report.nextAt = report.nextAt === null ? at : Math.min(report.nextAt, at);
    };
    for (const { effectId, partition } of candidates) {
      let one: RecoverOne;
      try {
        one = partition === null ? { kind: 'skipped', effectId, reason: 'unknown effect id' } : await recoverOne(effectId, partition);
      } catch (error) {
        if (error instanceof ProcessCrash) throw error;
        one = { kind: 'unresolved', effectId, outcome: `UNRESOLVED:${errorName(error)}`, error: String(error instanceof Error ? error.message : error) };
      }
      switch (one.kind) {
        case 'settled':
          report.settled.push({ effectId, outcome: one.outcome, sentence: explainOutcome(one.outcome) });
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
          report.unresolved.push({ effectId, outcome: one.outcome, error: one.error });
          break;
        default: {
          const never: never = one;
          return never;
        }
      }
    }
    if (report.settled.length + report.unresolved.length + report.waiting.length > 0) logger.info({ settled: report.settled.length, waiting: report.waiting.length, skipped: report.skipped.length, unresolved: report.unresolved.length }, 'recovery pass');
    return report;
  }

  function proposedDraft(proposal: ReturnType<typeof parseProposal>, premises: JsonObject) {
    return {
      kind: 'PROPOSED' as const,
      agent: proposal.agent,
      approval: proposal.approval,
      premises,
      effect: proposal.effect,
      request: proposal.request ?? null,
      decision: proposal.decision ?? null,
    };
  }

  return {
    owner,
    target,
    /** Submits a proposal; an IN_FLIGHT answer also says how long to wait before asking again. */
    async submit(input: unknown): Promise<GateResult> {
      const answer = await submit(input);
      if (answer.outcome === 'IN_FLIGHT' && answer.retryAt !== undefined) answer.retryAfterMs = Math.max(0, answer.retryAt - (await journal.serverTime()));
      return answer;
    },
    recover,
    effectIdOf(input: unknown): string {
      const proposal = parseProposal(input);
      return effectIdFor({ requestId: proposal.requestId, effect: proposal.effect });
    },
    async receipt(effectId: string) {
      return journal.receipt(effectId);
    },
  };
}
