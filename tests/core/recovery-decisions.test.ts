// What recovery does with an open dispatch, for each tier, fault, re-check result and lookup answer (DESIGN §4, §7):
// resend only what the target dedupes or provably lacks, record what landed even when the re-check failed, trust
// an empty lookup only after the send deadline plus the settle margin, and never guess on tier 3.
import { describe, expect, it } from 'vitest';
import { absenceTrustedAt, comparePremises, dispatchBlocker, openDispatch, planRecovery, premisesDecidedOn, recheckFailure, recoveryMode, resendAfterUnknownAt, UNKNOWN_BACKOFF_CAP_MS, type Lookup, type RecoveryStep, type RecoveryTiming } from '../../src/core/decisions.js';
import { timingProblems } from '../../src/core/timing.js';
import { loadConfig } from '../../src/config.js';
import type { Checks } from '../../src/core/entries.js';
import { testKey } from '../support/harness.js';
import { checks, chainEffectId, drafts, EFFECT, PREMISES, sealChain } from './entry-chain.js';

const DAY = 24 * 60 * 60 * 1000;
const HOUR = 60 * 60 * 1000;
const NOW = 1_780_000_100_000;
const SETTLE = 150;
const DEADLINE = NOW - 1_000;
const TRUSTED_AT = DEADLINE + SETTLE;

/** A crash one second ago on a tier-1, queryable target, well inside Stripe's 24 h idempotency window. */
function timing(overrides: Partial<RecoveryTiming> = {}): RecoveryTiming {
  return { tier: 1, queryable: true, now: NOW, dispatchedAt: DEADLINE - 400, sendDeadline: DEADLINE, deathProvenAt: null, dedupWindowMs: DAY, dedupMarginMs: HOUR, settleMarginMs: SETTLE, ...overrides };
}

const RECHECK: Record<'held' | 'lease' | 'stale' | 'both', Checks> = {
  held: checks(),
  lease: checks({ approvalLive: false, approvalProblems: ['approval ap_chain was revoked'] }),
  stale: checks({ violations: ['chargebacks: was [], now ["du_1"]'], changes: [{ field: 'chargebacks', was: [], now: ['du_1'] }] }),
  both: checks({ approvalLive: false, approvalProblems: ['approval ap_chain was revoked'], violations: ['chargebacks: was [], now ["du_1"]'] }),
};

const NOT_RUN: Lookup = { state: 'not-run' };
const FOUND: Lookup = { state: 'found', found: 're_1', object: { id: 're_1' } };
const ABSENT: Lookup = { state: 'absent' };
const BEFORE_SETTLED = { now: TRUSTED_AT - 1 };
// Past the window even at the earlier `now` of BEFORE_SETTLED, so the two combine.
const PAST_WINDOW = { dispatchedAt: BEFORE_SETTLED.now - (DAY - HOUR) - 1 };

// A request of the dispatch got no definite answer (a 500 Stripe may have stored under the key) before the deadline.
const ANSWERED_UNKNOWN = { unknownAnswers: 1, lastUnknownAt: DEADLINE - 200 };

const WAIT = { do: 'wait', until: TRUSTED_AT } as const;
const RETRY = { do: 'resend', outcome: 'COMMITTED_BY_RETRY' } as const;
const REAPPLY = { do: 'resend', outcome: 'REAPPLIED_AFTER_QUERY' } as const;
const LOOKUP = { do: 'lookup' } as const;
const COMMIT_FOUND = { do: 'commit-found', found: 're_1' } as const;
const REFUSE_LEASE = { do: 'refuse', outcome: 'REFUSED:lease_at_recovery' } as const;
const REFUSE_STALE = { do: 'refuse', outcome: 'REFUSED:stale_premise_at_recovery' } as const;
const AMBIGUOUS = { do: 'ambiguous' } as const;

type Row = [rule: string, timing: Partial<RecoveryTiming>, recheck: keyof typeof RECHECK, lookup: Lookup, expected: Partial<RecoveryStep>];

const TABLE: Row[] = [
  // Tier 1 inside the dedup window: the target dedupes on our key, so a passing re-check resends at once.
  ['tier 1, re-check held: resend under the same key without a lookup', {}, 'held', NOT_RUN, RETRY],
  ['tier 1, re-check held: resend at once, even before a lookup could be trusted', BEFORE_SETTLED, 'held', ABSENT, RETRY],
  ['tier 1, approval dead: look up before deciding', {}, 'lease', NOT_RUN, LOOKUP],
  ['tier 1, premise changed: look up before deciding', {}, 'stale', NOT_RUN, LOOKUP],
  ['tier 1, approval dead but it had landed: record it', {}, 'lease', FOUND, COMMIT_FOUND],
  ['tier 1, premise changed but it had landed: record it, not undo it', {}, 'stale', FOUND, COMMIT_FOUND],
  ['tier 1, approval dead, nothing found yet: wait for deadline + settle margin', BEFORE_SETTLED, 'lease', ABSENT, WAIT],
  ['tier 1, premise changed, nothing found yet: wait for deadline + settle margin', BEFORE_SETTLED, 'stale', ABSENT, WAIT],
  ['tier 1, approval dead, nothing found after settling: refuse', {}, 'lease', ABSENT, REFUSE_LEASE],
  ['tier 1, premise changed, nothing found after settling: refuse', {}, 'stale', ABSENT, REFUSE_STALE],
  ['tier 1, both failed: the dead approval is the reason given', {}, 'both', ABSENT, REFUSE_LEASE],
  ['tier 1, not queryable, re-check held: resend under the same key', { queryable: false }, 'held', NOT_RUN, RETRY],
  ['tier 1, not queryable, re-check failed: nobody can tell whether it landed', { queryable: false }, 'stale', NOT_RUN, AMBIGUOUS],
  // Tier 1 after a request got no definite answer: the target may replay that answer to every resend under the key
  // (Stripe stores a 500 for 24 h), so it is looked up first, as past the window; a crash leaves no such answer.
  ['tier 1, crash with no indefinite answer recorded: resend under the same key at once', { unknownAnswers: 0, lastUnknownAt: null }, 'held', NOT_RUN, RETRY],
  ['tier 1, a request got no definite answer, re-check held: look up before resending under the key', ANSWERED_UNKNOWN, 'held', NOT_RUN, LOOKUP],
  ['tier 1, a request got no definite answer and it had landed: committed on query', ANSWERED_UNKNOWN, 'held', FOUND, COMMIT_FOUND],
  ['tier 1, a request got no definite answer, nothing found yet: wait for deadline + settle margin', { ...ANSWERED_UNKNOWN, ...BEFORE_SETTLED }, 'held', ABSENT, WAIT],
  ['tier 1, a request got no definite answer, nothing found after settling: resend under the same key', ANSWERED_UNKNOWN, 'held', ABSENT, RETRY],
  ['tier 1, a request got no definite answer, premise changed, nothing found: refuse', ANSWERED_UNKNOWN, 'stale', ABSENT, REFUSE_STALE],
  ['tier 1, not queryable, a request got no definite answer: resend once the spacing has passed', { ...ANSWERED_UNKNOWN, queryable: false }, 'held', NOT_RUN, RETRY],
  // Tier 1 past the dedup window minus the margin: the key may be forgotten, so it is treated like tier 2.
  ['tier 1 past the dedup window: look up even though the re-check held', PAST_WINDOW, 'held', NOT_RUN, LOOKUP],
  ['tier 1 past the dedup window: found means committed', PAST_WINDOW, 'held', FOUND, COMMIT_FOUND],
  ['tier 1 past the dedup window: nothing found yet means wait', { ...PAST_WINDOW, ...BEFORE_SETTLED }, 'held', ABSENT, WAIT],
  ['tier 1 past the dedup window: nothing found after settling means re-apply', PAST_WINDOW, 'held', ABSENT, REAPPLY],
  ['tier 1 past the dedup window, premise changed, nothing found: refuse', PAST_WINDOW, 'stale', ABSENT, REFUSE_STALE],
  ['tier 1 past the dedup window and not queryable: ambiguous', { ...PAST_WINDOW, queryable: false }, 'held', NOT_RUN, AMBIGUOUS],
  // Tier 2: queryable only. Nothing is resent before a trusted empty lookup.
  ['tier 2, re-check held: look up first', { tier: 2 }, 'held', NOT_RUN, LOOKUP],
  ['tier 2, found: committed on query', { tier: 2 }, 'held', FOUND, COMMIT_FOUND],
  ['tier 2, approval dead but found: committed on query', { tier: 2 }, 'lease', FOUND, COMMIT_FOUND],
  ['tier 2, nothing found before settling: wait', { tier: 2, ...BEFORE_SETTLED }, 'held', ABSENT, WAIT],
  ['tier 2, nothing found after settling, re-check held: re-apply', { tier: 2 }, 'held', ABSENT, REAPPLY],
  ['tier 2, nothing found after settling, approval dead: refuse', { tier: 2 }, 'lease', ABSENT, REFUSE_LEASE],
  ['tier 2, nothing found after settling, premise changed: refuse', { tier: 2 }, 'stale', ABSENT, REFUSE_STALE],
  // Tier 3: neither dedupes nor can be queried.
  ['tier 3, re-check held: ambiguous, never a blind resend', { tier: 3, queryable: false }, 'held', NOT_RUN, AMBIGUOUS],
  ['tier 3, re-check failed: ambiguous', { tier: 3, queryable: false }, 'stale', ABSENT, AMBIGUOUS],
  // Unless no request of the dispatch ever left (every claim given up before a send): nothing can have landed.
  ['tier 3, nothing ever sent, re-check held: send it', { tier: 3, queryable: false, neverSent: true }, 'held', NOT_RUN, REAPPLY],
  ['tier 3, nothing ever sent, approval dead: refuse', { tier: 3, queryable: false, neverSent: true }, 'lease', NOT_RUN, REFUSE_LEASE],
  ['tier 3, nothing ever sent, premise changed: refuse', { tier: 3, queryable: false, neverSent: true }, 'stale', NOT_RUN, REFUSE_STALE],
];

describe('planRecovery decision table', () => {
  it.each(TABLE)('%s', (_rule, overrides, recheck, lookup, expected) => {
    expect(planRecovery(timing(overrides), RECHECK[recheck], lookup)).toMatchObject(expected);
  });

  it('trusts an empty lookup from exactly the send deadline plus the settle margin, not a millisecond before', () => {
    expect(absenceTrustedAt(timing())).toBe(DEADLINE + SETTLE);
    expect(planRecovery(timing({ tier: 2, now: TRUSTED_AT - 1 }), RECHECK.held, ABSENT)).toEqual({ do: 'wait', until: TRUSTED_AT, reason: expect.stringContaining('settle margin') });
    expect(planRecovery(timing({ tier: 2, now: TRUSTED_AT }), RECHECK.held, ABSENT)).toEqual(REAPPLY);
  });

  it('spaces the resends of a key that keeps getting no definite answer: the settle margin after the last one, doubling, at most an hour', () => {
    const last = NOW - 10;
    const unknown = (count: number, now = NOW) => timing({ unknownAnswers: count, lastUnknownAt: last, now });
    expect(resendAfterUnknownAt(timing())).toBeNull();
    expect(resendAfterUnknownAt(unknown(1))).toBe(last + SETTLE);
    expect(resendAfterUnknownAt(unknown(3))).toBe(last + 4 * SETTLE);
    expect(resendAfterUnknownAt(unknown(80))).toBe(last + UNKNOWN_BACKOFF_CAP_MS);
    // Nothing found and the lookup trusted: the resend still waits for its turn, then goes under the same key.
    expect(planRecovery(unknown(3), RECHECK.held, ABSENT)).toEqual({ do: 'wait', until: last + 4 * SETTLE, reason: expect.stringContaining('no definite answer') });
    expect(planRecovery(unknown(3, last + 4 * SETTLE), RECHECK.held, ABSENT)).toEqual(RETRY);
    // A target that cannot be queried gets the same spacing.
    expect(planRecovery({ ...unknown(3), queryable: false }, RECHECK.held, NOT_RUN)).toMatchObject({ do: 'wait', until: last + 4 * SETTLE });
    // The spacing never holds back a refusal: a failed re-check with nothing found settles at once.
    expect(planRecovery(unknown(3), RECHECK.stale, ABSENT)).toEqual(REFUSE_STALE);
  });

  it('never sends or refuses a dispatch nothing was ever sent for while its re-check cannot be read', () => {
    expect(planRecovery(timing({ tier: 3, queryable: false, neverSent: true }), null, NOT_RUN)).toMatchObject({ do: 'unresolved' });
  });

  it('gives a reason with every ambiguous answer', () => {
    for (const [, overrides, recheck, lookup, expected] of TABLE) {
      if (expected.do !== 'ambiguous') continue;
      const step = planRecovery(timing(overrides), RECHECK[recheck], lookup);
      expect(step.do === 'ambiguous' && step.reason.length > 20).toBe(true);
    }
  });
});

describe('recoveryMode and the dedup window', () => {
  it('resends under the same key up to exactly the dedup window minus the margin, then falls back to lookup', () => {
    const edge = NOW - (DAY - HOUR);
    expect(recoveryMode(timing({ dispatchedAt: edge }))).toEqual({ mode: 'resend-same-key' });
    expect(recoveryMode(timing({ dispatchedAt: edge - 1 }))).toEqual({ mode: 'lookup' });
    expect(recoveryMode(timing({ dispatchedAt: edge - 1, queryable: false }))).toMatchObject({ mode: 'ambiguous', reason: expect.stringContaining('idempotency key may have expired') });
  });

  it('looks up on tier 2 and gives up on tier 3', () => {
    expect(recoveryMode(timing({ tier: 2 }))).toEqual({ mode: 'lookup' });
    expect(recoveryMode(timing({ tier: 3, queryable: false }))).toMatchObject({ mode: 'ambiguous' });
  });

  it('requires a dedup margin larger than send timeout plus settle margin, so a last-moment resend settles before Stripe forgets the key', () => {
    const base = { sendTimeoutMs: 30_000, settleMarginMs: 10_000, dedupWindowMs: DAY, claimTtlMs: 45_000, heartbeatMs: 1_000, heartbeatTtlMs: 4_000, durabilityCheckMs: 5_000 };
    expect(timingProblems({ ...base, dedupMarginMs: 40_000 }).map((problem) => problem.rule)).toEqual(['dedup_margin_exceeds_send_timeout_plus_settle_margin']);
    expect(timingProblems({ ...base, dedupMarginMs: 40_001 })).toEqual([]);

    // Why: the latest resend recovery allows starts at age window - margin; it is settled (deadline + settle
    // margin) before the window closes exactly when margin > send timeout + settle margin.
    const dedupMarginMs = 40_001;
    const dispatchedAt = NOW - (DAY - dedupMarginMs);
    expect(recoveryMode(timing({ dispatchedAt, dedupMarginMs }))).toEqual({ mode: 'resend-same-key' });
    expect(NOW + base.sendTimeoutMs + base.settleMarginMs).toBeLessThan(dispatchedAt + DAY);
  });

  it('ships defaults that meet every timing rule against Stripe\'s 24 h window', () => {
    const config = loadConfig({});
    expect(timingProblems({ ...config, dedupWindowMs: DAY })).toEqual([]);
  });
});

describe('decisions over an effect\'s entries', () => {
  const { key } = testKey();
  const effectId = chainEffectId('decisions');

  it('names the approval before the premises when both failed a re-check', () => {
    expect(recheckFailure(RECHECK.both)).toBe('lease');
    expect(recheckFailure(RECHECK.stale)).toBe('stale_premise');
    expect(recheckFailure(RECHECK.held)).toBeNull();
  });

  it('keeps a dispatch open until COMMITTED, AMBIGUOUS or a resolving REFUSED, and blocks a second dispatch meanwhile', () => {
    const opened = sealChain(effectId, [drafts.proposed(), drafts.authorized(), drafts.dispatched()], key);
    expect(openDispatch(opened)?.kind).toBe('DISPATCHED');
    expect(dispatchBlocker(opened, EFFECT)).toBe('in_flight');

    const refusedNotResolving = sealChain(effectId, [drafts.proposed(), drafts.authorized(), drafts.dispatched(), { kind: 'REFUSED', code: 'REFUSED:lease', reason: 'x', checks: null, rechecked: null, changes: [], resolves: false }], key);
    expect(openDispatch(refusedNotResolving)).not.toBeNull();

    const committed = sealChain(effectId, [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_1')], key);
    expect(openDispatch(committed)).toBeNull();
    expect(dispatchBlocker(committed, EFFECT)).toBe('committed');
  });

  it('blocks a different payload under the same effect id, however the keys are ordered', () => {
    const proposed = sealChain(effectId, [drafts.proposed()], key);
    expect(dispatchBlocker(proposed, { ...EFFECT, amount: 3_000 })).toBe('conflicting_payload');
    expect(dispatchBlocker(proposed, Object.fromEntries(Object.entries(EFFECT).reverse()))).toBeNull();
  });

  it('judges a retry by the premises first decided under the same approval, and a new approval by its own', () => {
    const proposed = sealChain(effectId, [drafts.proposed()], key);
    const incoming = { chargebacks: ['du_1'], refunded_by_others: 0 };
    expect(premisesDecidedOn(proposed, 'ap_chain', incoming)).toEqual(PREMISES);
    expect(premisesDecidedOn(proposed, 'ap_other', incoming)).toEqual(incoming);
  });
});

describe('comparePremises', () => {
  it('compares own facts only: a premise named after an Object property reads as absent (null), never as Object\'s', () => {
    expect(comparePremises({ constructor: null, toString: null, __defineGetter__: null }, {})).toEqual({ violations: [], changes: [] });
    expect(comparePremises({ constructor: 'x' }, {})).toEqual({ violations: ['constructor: was "x", now null'], changes: [{ field: 'constructor', was: 'x', now: null }] });
  });

  it('compares canonical forms, so key order inside a fact is no change but any value change is', () => {
    expect(comparePremises({ dispute: { id: 'du_1', status: 'won' } }, { dispute: { status: 'won', id: 'du_1' } }).violations).toEqual([]);
    expect(comparePremises({ chargebacks: [] }, { chargebacks: ['du_1'] }).changes).toEqual([{ field: 'chargebacks', was: [], now: ['du_1'] }]);
  });
});
