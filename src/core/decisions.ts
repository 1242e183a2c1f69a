// The gate's decisions as pure functions over one effect's entries. The Redis scripts enforce the same rules
// atomically; these functions are what the gate, recovery and verify() reason with.
import { payloadHash } from './effect-id.js';
import type { Entry, EntryOf, Checks } from './entries.js';
import type { JsonObject } from './json.js';

export type Blocker = 'in_flight' | 'committed' | 'ambiguous' | 'conflicting_payload' | 'target_error';

function closesDispatch(entry: Entry): boolean {
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

/** First reason a new dispatch of `effect` must not happen, in the order the dispatch script checks them. */
export function dispatchBlocker(entries: readonly Entry[], effect: JsonObject): Blocker | null {
  if (openDispatch(entries)) return 'in_flight';
  if (entries.some((entry) => entry.kind === 'COMMITTED')) return 'committed';
  if (entries.some((entry) => entry.kind === 'AMBIGUOUS')) return 'ambiguous';
  const first = firstProposal(entries);
  if (first && payloadHash(first.effect) !== payloadHash(effect)) return 'conflicting_payload';
  // The target's definite no is final for this effect id: sending it again could land what it refused.
  if (entries.some((entry) => entry.kind === 'REFUSED' && entry.resolves && entry.code === 'REFUSED:target_error')) return 'target_error';
  return null;
}

/**
 * The premises a dispatch is judged against: those of the first proposal under the same approval. A retry under
 * one approval is held to the facts the approver saw; a new approval is a new decision and brings its own facts.
 */
export function premisesDecidedOn(entries: readonly Entry[], approvalId: string | null, incoming: JsonObject): JsonObject {
  for (const entry of entries) {
    if (entry.kind === 'PROPOSED' && entry.approval === approvalId) return entry.premises;
  }
  return incoming;
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
  dedupWindowMs: number;
  dedupMarginMs: number;
  settleMarginMs: number;
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

/** Instant from which a lookup that finds nothing may be believed: a dead sender's bytes may still be on their way until then. */
export function absenceTrustedAt(timing: Pick<RecoveryTiming, 'sendDeadline' | 'settleMarginMs'>): number {
  return timing.sendDeadline + timing.settleMarginMs;
}

export type Lookup = { state: 'not-run' } | { state: 'found'; found: string; object: JsonObject | null } | { state: 'absent' };

export type RecoveryStep =
  | { do: 'resend'; outcome: 'COMMITTED_BY_RETRY' | 'REAPPLIED_AFTER_QUERY' }
  | { do: 'lookup' }
  | { do: 'commit-found'; found: string }
  | { do: 'refuse'; outcome: 'REFUSED:lease_at_recovery' | 'REFUSED:stale_premise_at_recovery' }
  | { do: 'ambiguous'; reason: string }
  | { do: 'wait'; until: number; reason: string };

/**
 * One step of recovery for an open dispatch whose claim this recoverer holds (DESIGN §7). Called again with the
 * lookup's answer when it asks for one. What landed is recorded even when the re-check failed: it is not undone.
 */
export function planRecovery(timing: RecoveryTiming, recheck: Checks, lookup: Lookup): RecoveryStep {
  const mode = recoveryMode(timing);
  if (mode.mode === 'ambiguous') return { do: 'ambiguous', reason: mode.reason };
  const failure = recheckFailure(recheck);
  if (mode.mode === 'resend-same-key' && failure === null) return { do: 'resend', outcome: 'COMMITTED_BY_RETRY' };
  if (!timing.queryable) {
    return { do: 'ambiguous', reason: `the re-check failed (${failure ?? 'unknown'}) and the target cannot be queried to learn whether the first send landed` };
  }
  switch (lookup.state) {
    case 'not-run':
      return { do: 'lookup' };
    case 'found':
      return { do: 'commit-found', found: lookup.found };
    case 'absent': {
      const trustedAt = absenceTrustedAt(timing);
      if (timing.now < trustedAt) return { do: 'wait', until: trustedAt, reason: 'a lookup that finds nothing is trusted only after the send deadline plus the settle margin' };
      if (failure === 'lease') return { do: 'refuse', outcome: 'REFUSED:lease_at_recovery' };
      if (failure === 'stale_premise') return { do: 'refuse', outcome: 'REFUSED:stale_premise_at_recovery' };
      return { do: 'resend', outcome: mode.mode === 'resend-same-key' ? 'COMMITTED_BY_RETRY' : 'REAPPLIED_AFTER_QUERY' };
    }
    default: {
      const never: never = lookup;
      return never;
    }
  }
}

/** Timing rules a configuration must meet; returns readable problems. */
export function timingProblems(t: { sendTimeoutMs: number; settleMarginMs: number; dedupWindowMs: number; dedupMarginMs: number; claimTtlMs: number }): string[] {
  const problems: string[] = [];
  if (t.dedupMarginMs <= t.sendTimeoutMs + t.settleMarginMs) {
    problems.push(`dedup margin ${t.dedupMarginMs} ms must exceed send timeout + settle margin (${t.sendTimeoutMs + t.settleMarginMs} ms), or a resend may reach Stripe after it forgot the key`);
  }
  if (t.dedupMarginMs >= t.dedupWindowMs) problems.push(`dedup margin ${t.dedupMarginMs} ms must be smaller than the dedup window ${t.dedupWindowMs} ms`);
  if (t.claimTtlMs <= t.sendTimeoutMs) problems.push(`claim TTL ${t.claimTtlMs} ms must exceed the send timeout ${t.sendTimeoutMs} ms, so a live slow sender keeps its claim`);
  return problems;
}
