// What submit, recovery and settling share: the adapters, the timing, who this sender is, which effects it is busy
// with, and the shapes of their answers. One context per gate instance ("worker").
import type { Logger } from 'pino';
import type { ApprovalSnapshot, Checks, CommitVia, PremiseChange } from '../core/entries.js';
import type { JsonObject } from '../core/json.js';
import { errorCode, InterlockError, type SlowDown } from '../core/errors.js';
import { explainRecorded, type Outcome } from '../core/outcomes.js';
import { quoteError } from '../core/quote.js';
import type { Target } from '../core/target.js';
import type { Alerts } from '../redis/alerts.js';
import type { Approvals, GrantedTerms } from '../redis/approvals.js';
import type { Heartbeat } from '../redis/heartbeat.js';
import type { Journal } from '../redis/journal.js';
import type { SendWatchdog } from './send-watchdog.js';

export type GateTiming = {
  /** How long a claim lasts without its holder settling it; must exceed the target's send timeout. */
  claimTtlMs: number;
  /** Extra time after the last send stopped before a lookup that finds nothing is believed. */
  settleMarginMs: number;
  /** Tier 1 falls back to lookup this long before the target forgets an idempotency key. */
  dedupMarginMs: number;
  /** Replicas that must acknowledge a DISPATCHED before it is sent (0: the master's fsynced AOF is enough). */
  minReplicas?: number;
  replicaWaitMs?: number;
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
  /** The target rate-limited the send (its outcome is unknown and the claim stays): callers should slow down. */
  slowDown?: SlowDown;
};

export type RecoveryReport = {
  settled: { effectId: string; outcome: Outcome; sentence: string }[];
  waiting: { effectId: string; until: number; reason: string }[];
  skipped: { effectId: string; reason: string; holder?: string; retryAt?: number }[];
  /** `retryAt` (Redis ms): when a pass looks at it again (a resend whose outcome is unknown), else the next periodic pass. */
  unresolved: { effectId: string; outcome: Outcome; error: string; retryAt?: number }[];
  /** The earliest instant (Redis clock) at which recovery has more to do, or null. */
  nextAt: number | null;
};

/** What one step of settling or recovering an effect came to. */
export type Settled =
  | { kind: 'settled'; effectId: string; outcome: Outcome; evidence?: string | null; reason?: string; changes?: PremiseChange[] }
  | { kind: 'waiting'; effectId: string; until: number; reason: string }
  | { kind: 'skipped'; effectId: string; reason: string; holder?: string; retryAt?: number; slowDown?: SlowDown }
  | { kind: 'unresolved'; effectId: string; outcome: Outcome; error: string; slowDown?: SlowDown; retryAt?: number };

/**
 * What the gate consults before every dispatch and send: throws while this process may not send (Redis not
 * durable, as redis/durability.ts keeps current; another process beating under this worker's id).
 */
export type SendGuard = { assertMaySend(): void };

export class PremiseReadError extends InterlockError {
  constructor(effectId: string, cause: unknown) {
    super('premise_read_failed', `Could not re-read the premises of effect ${effectId} (${quoteError(cause)}); nothing was sent. Retry when the target answers.`, { cause });
    this.name = 'PremiseReadError';
  }
}

export type GateDeps = {
  journal: Journal;
  approvals: Approvals;
  heartbeat: Heartbeat;
  target: Target;
  timing: GateTiming;
  logger: Logger;
  /**
   * Armed around every send, from right before the request leaves until it is answered or its deadline passed: kills
   * the process when a send outlives its deadline because the event loop stalled (send-watchdog.ts), and tells a
   * closing sender which sends are still on the wire (startSender).
   */
  watchdog?: SendWatchdog;
  guard?: SendGuard;
  /** Opens the escalation inbox item a settled effect calls for (redis/inbox.ts); absent, nothing is opened. */
  inbox?: { openFor(effectId: string): Promise<unknown> };
  /**
   * Where recovery raises a `send_unanswered` alert for an open effect whose sends have had no definite answer for
   * longer than `afterMs` since it was dispatched, and resolves it when the effect settles; absent, none is raised.
   */
  unanswered?: { alerts: Pick<Alerts, 'raise' | 'get' | 'resolve'>; afterMs: number; /** The currency credits are given in (INTERLOCK_CREDIT_CURRENCY), for the alert's amount. */ creditCurrency?: string };
  /** What the gate tells the process about itself (metrics); each callback must return at once and never throw. */
  events?: GateEvents;
  /**
   * Starts a re-read of a settled effect's post-send facts (src/facts/apply.ts `reread`), for an effect whose settle
   * found its subject marked by a payment fact that came while it was in flight (settle-5.lua). It returns at once:
   * the settle's answer never waits on Stripe's reads; whoever supplies it runs the re-read, logs its failure and
   * waits for it when closing. Absent, such a fact reaches the receipt at the reconciler's next pass.
   */
  rereadFacts?: (effectId: string) => void;
};

/** Events the gate reports as they happen, for counters the journal cannot answer (a takeover leaves no entry). */
export type GateEvents = {
  /** Recovery took an open dispatch's claim: its holder was dead (`owner-dead`), its claim had lapsed (`expired`), or it was this worker's own from before (`own`). */
  takeover?(reason: 'own' | 'expired' | 'owner-dead'): void;
  /**
   * What a submit waiting on another refund of its payment settled of it, or could not find out, by recovering it
   * (submit.ts waitForRefunds), told as a recovery pass's report is, for whoever counts what recovery settles (the
   * metrics): nothing else would count it, as the passes then find nothing open and the holder's own job, run again,
   * answers from the journal. Must return at once and never throw.
   */
  recovered?(report: RecoveryReport): void;
};

export type GateContext = GateDeps & {
  owner: string;
  nonce: string;
  /** How long reads of the target (facts, lookups) may take. */
  readTimeoutMs: number;
  busy: {
    hold(effectId: string): void;
    release(effectId: string): void;
    has(effectId: string): boolean;
  };
  /**
   * Landings this process heard from the target but could not write down (Redis was away when the settle ran): the
   * next recovery pass of this process commits the effect from here, as its send, before it plans anything. A target
   * that can neither dedupe nor be looked up (tier 3) would otherwise leave a landing the gate saw AMBIGUOUS.
   */
  heard: Map<string, HeardLanding>;
  /** Granted terms of the approvals this worker has used: they never change, so one read serves every effect. */
  terms(approvalId: string, options?: { refresh?: boolean; likely?: string }): Promise<GrantedTerms | null>;
  result(effectId: string, outcome: Outcome, extra?: Omit<GateResult, 'effectId' | 'outcome' | 'sentence'>): GateResult;
};

/**
 * A landing heard but not written down (GateContext.heard): how it would have been committed, and `head`, the chain head
 * its sender held, which ties it to that dispatch (it is at or after the dispatch's DISPATCHED entry).
 */
export type HeardLanding = { via: CommitVia; result: JsonObject; rechecked: Checks | null; outcome: Outcome; head: string; epoch: number; approvalId: string };

/** The most landings `heard` keeps: only those of a Redis outage, each settled on this process's next pass. */
export const HEARD_KEPT = 10_000;

export function checksOf(snapshot: ApprovalSnapshot | null, approvalIssues: string[], violations: string[] = [], changes: PremiseChange[] = []): Checks {
  return { approvalLive: snapshot !== null && approvalIssues.length === 0, approval: snapshot, approvalProblems: approvalIssues, violations, changes };
}

/** The terms as an entry quotes them: the totals are left to the scripts, which enforce them atomically. */
export function snapshotOfTerms(terms: GrantedTerms): ApprovalSnapshot {
  return { id: terms.id, approver: terms.approver, capCents: terms.capCents, expiresAt: terms.expiresAt, maxUses: terms.maxUses, scope: terms.scope, revoked: false, revokedAt: null, reservedCents: null, uses: null };
}

/** A short name for an error, for `UNRESOLVED:<name>`; never throws, whatever a target threw. */
export function errorName(error: unknown): string {
  try {
    if (error instanceof InterlockError) return error.code;
    if (!(error instanceof Error)) return 'unknown_error';
    const code: unknown = (error as Error & { code?: unknown }).code;
    const name: unknown = typeof code === 'string' && /^[A-Za-z0-9_]{1,60}$/.test(code) ? code : errorCode(error) === 'internal' ? error.name : errorCode(error);
    return typeof name === 'string' ? name : 'unknown_error';
  } catch {
    return 'unknown_error';
  }
}

export function createContext(deps: GateDeps): GateContext {
  const busyCounts = new Map<string, number>();
  const cache = new Map<string, GrantedTerms>();
  const pendingTerms = new Map<string, Promise<GrantedTerms | null>>();
  return {
    ...deps,
    owner: deps.heartbeat.workerId,
    nonce: deps.heartbeat.nonce,
    readTimeoutMs: deps.target.sendTimeoutMs,
    heard: new Map(),
    // Effects this instance is dispatching, sending or recovering right now, with how many of its calls are. Its
    // own recovery pass or a duplicate job must treat them as held by a live sender, not as its leftovers.
    busy: {
      hold(effectId) {
        busyCounts.set(effectId, (busyCounts.get(effectId) ?? 0) + 1);
      },
      release(effectId) {
        const left = (busyCounts.get(effectId) ?? 1) - 1;
        if (left > 0) busyCounts.set(effectId, left);
        else busyCounts.delete(effectId);
      },
      has: (effectId) => busyCounts.has(effectId),
    },
    async terms(approvalId, options = {}) {
      const known = options.refresh ? undefined : cache.get(approvalId);
      if (known) return known;
      // A read already under way serves whoever asks meanwhile (an effects job asks ahead, see submitLatest).
      const reading = options.refresh ? undefined : pendingTerms.get(approvalId);
      if (reading) return reading;
      const read = deps.approvals.terms(approvalId, options.likely);
      pendingTerms.set(approvalId, read);
      let terms: GrantedTerms | null;
      try {
        terms = await read;
      } finally {
        if (pendingTerms.get(approvalId) === read) pendingTerms.delete(approvalId);
      }
      if (terms === null) {
        cache.delete(approvalId);
        return null;
      }
      if (cache.size >= 10_000) cache.clear();
      cache.set(approvalId, terms);
      return terms;
    },
    result(effectId, outcome, extra = {}) {
      return { effectId, outcome, sentence: explainRecorded(outcome, extra.reason), ...extra };
    },
  };
}
