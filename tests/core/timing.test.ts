// Each timing rule has a test named after it that breaks exactly that rule (the others hold) and checks the edge
// where it starts to hold, so removing a rule, or moving its edge, fails its test.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { STRIPE_DEDUP_WINDOW_MS, TIMING_RULES, timingProblems, type TimingRule, type TimingSettings } from '../../src/core/timing.js';

const DEFAULTS: TimingSettings = {
  heartbeatMs: 1_000,
  heartbeatTtlMs: 4_000,
  claimTtlMs: 45_000,
  sendTimeoutMs: 30_000,
  settleMarginMs: 10_000,
  dedupMarginMs: 3_600_000,
  dedupWindowMs: STRIPE_DEDUP_WINDOW_MS,
  durabilityCheckMs: 5_000,
};

const rulesBroken = (overrides: Partial<TimingSettings>): TimingRule[] => timingProblems({ ...DEFAULTS, ...overrides }).map((problem) => problem.rule);

describe('timing rules', () => {
  it('accepts the documented defaults', () => {
    expect(timingProblems(DEFAULTS)).toEqual([]);
  });

  it('accepts the short timings the test harness runs the gate with', () => {
    expect(timingProblems({ heartbeatMs: 200, heartbeatTtlMs: 800, claimTtlMs: 3_000, sendTimeoutMs: 1_000, settleMarginMs: 300, dedupMarginMs: 10_000, dedupWindowMs: STRIPE_DEDUP_WINDOW_MS, durabilityCheckMs: 5_000 })).toEqual([]);
  });

  it('settings_are_whole_milliseconds: NaN, Infinity, fractions and negatives are refused', () => {
    expect(rulesBroken({ durabilityCheckMs: 1.5 })).toEqual(['settings_are_whole_milliseconds']);
    expect(rulesBroken({ dedupWindowMs: Number.POSITIVE_INFINITY })).toEqual(['settings_are_whole_milliseconds']);
    const nan = timingProblems({ ...DEFAULTS, claimTtlMs: Number.NaN });
    expect(nan[0]).toMatchObject({ rule: 'settings_are_whole_milliseconds', settings: ['claimTtlMs'] });
    expect(nan.map((problem) => problem.rule)).toContain('claim_ttl_exceeds_send_timeout');
    expect(rulesBroken({ sendTimeoutMs: -1 })).toEqual(['settings_are_whole_milliseconds']);
  });

  it('heartbeat_interval_positive: a zero heartbeat interval is refused', () => {
    expect(rulesBroken({ heartbeatMs: 0 })).toEqual(['heartbeat_interval_positive']);
    expect(rulesBroken({ heartbeatMs: 1 })).toEqual([]);
  });

  it('heartbeat_ttl_at_least_twice_interval: a TTL shorter than twice the refresh interval is refused, so one late beat does not read as a death', () => {
    expect(rulesBroken({ heartbeatMs: 1_000, heartbeatTtlMs: 1_999 })).toEqual(['heartbeat_ttl_at_least_twice_interval']);
    expect(rulesBroken({ heartbeatMs: 1_000, heartbeatTtlMs: 500 })).toEqual(['heartbeat_ttl_at_least_twice_interval']);
    expect(rulesBroken({ heartbeatMs: 1_000, heartbeatTtlMs: 2_000 })).toEqual([]);
    const [problem] = timingProblems({ ...DEFAULTS, heartbeatMs: 1_000, heartbeatTtlMs: 1_500 });
    expect(problem).toEqual({
      rule: 'heartbeat_ttl_at_least_twice_interval',
      settings: ['heartbeatTtlMs', 'heartbeatMs'],
      message: 'the heartbeat TTL (1500 ms) must be at least twice the heartbeat interval (2 x 1000 = 2000 ms), so one late beat does not make a live worker look dead',
    });
  });

  it('claim_ttl_exceeds_send_timeout: a claim that can lapse during a send is refused', () => {
    expect(rulesBroken({ claimTtlMs: 30_000, sendTimeoutMs: 30_000 })).toEqual(['claim_ttl_exceeds_send_timeout']);
    expect(rulesBroken({ claimTtlMs: 30_001, sendTimeoutMs: 30_000 })).toEqual([]);
  });

  it('settle_margin_positive: a zero settle margin is refused', () => {
    expect(rulesBroken({ settleMarginMs: 0 })).toEqual(['settle_margin_positive']);
    expect(rulesBroken({ settleMarginMs: 1 })).toEqual([]);
  });

  it('dedup_margin_exceeds_send_timeout_plus_settle_margin: a resend must land before Stripe forgets the key', () => {
    expect(rulesBroken({ sendTimeoutMs: 30_000, settleMarginMs: 10_000, dedupMarginMs: 40_000 })).toEqual(['dedup_margin_exceeds_send_timeout_plus_settle_margin']);
    expect(rulesBroken({ sendTimeoutMs: 30_000, settleMarginMs: 10_000, dedupMarginMs: 40_001 })).toEqual([]);
  });

  it('dedup_margin_below_dedup_window: a margin as long as the window is refused', () => {
    expect(rulesBroken({ dedupMarginMs: STRIPE_DEDUP_WINDOW_MS })).toEqual(['dedup_margin_below_dedup_window']);
    expect(rulesBroken({ dedupMarginMs: STRIPE_DEDUP_WINDOW_MS - 1 })).toEqual([]);
  });

  it('durability_check_interval_positive: a zero durability check interval is refused', () => {
    expect(rulesBroken({ durabilityCheckMs: 0 })).toEqual(['durability_check_interval_positive']);
    expect(rulesBroken({ durabilityCheckMs: 1 })).toEqual([]);
  });

  it('reports every broken rule at once, in a fixed order, each naming the settings it relates', () => {
    const problems = timingProblems({ ...DEFAULTS, heartbeatTtlMs: 1_000, claimTtlMs: 1_000, settleMarginMs: 0, dedupMarginMs: STRIPE_DEDUP_WINDOW_MS, durabilityCheckMs: 0 });
    expect(problems.map((problem) => problem.rule)).toEqual(['heartbeat_ttl_at_least_twice_interval', 'claim_ttl_exceeds_send_timeout', 'settle_margin_positive', 'dedup_margin_below_dedup_window', 'durability_check_interval_positive']);
    for (const problem of problems) expect(problem.settings.length).toBeGreaterThan(0);
  });

  it('every rule has a test in this file whose title starts with its name', () => {
    const source = readFileSync(fileURLToPath(import.meta.url), 'utf8');
    for (const rule of TIMING_RULES) expect(source, `no test is named after ${rule}`).toContain(`it('${rule}: `);
  });
});
