// The timing rules a configuration must meet before a worker starts. Each rule guards an assumption the gate's
// safety argument makes about time; a setting that breaks one does not fail loudly later, it silently turns a
// live worker into a "dead" one or lets a resend reach Stripe after the key was forgotten. Pure: the settings
// come in, the broken rules go out, and the caller (loadConfig, the gate) decides how to refuse.
// All durations are in milliseconds.

/** Stripe keeps an idempotency key for 24 hours; past that a resend under the same key is a new request. */
export const STRIPE_DEDUP_WINDOW_MS = 24 * 60 * 60 * 1000;

export type TimingSettings = {
  /** How often a worker refreshes its heartbeat key. */
  heartbeatMs: number;
  /** How long a heartbeat key lives without a refresh; its absence proves the worker dead. */
  heartbeatTtlMs: number;
  /** How long a claim on an effect lives without its holder. */
  claimTtlMs: number;
  /** Every send is aborted after this long. */
  sendTimeoutMs: number;
  /** After a send's deadline, how long before a lookup that finds nothing is believed. */
  settleMarginMs: number;
  /** Tier 1 falls back to lookup this long before the target's dedup window ends. */
  dedupMarginMs: number;
  /** How long the target remembers an idempotency key (Stripe: STRIPE_DEDUP_WINDOW_MS). */
  dedupWindowMs: number;
  /** How often a running worker re-reads Redis's persistence settings. */
  durabilityCheckMs: number;
};

export type TimingSetting = keyof TimingSettings;

export const TIMING_RULES = [
  'settings_are_whole_milliseconds',
  'heartbeat_interval_positive',
  'heartbeat_ttl_at_least_twice_interval',
  'claim_ttl_exceeds_send_timeout',
  'settle_margin_positive',
  'dedup_margin_exceeds_send_timeout_plus_settle_margin',
  'dedup_margin_below_dedup_window',
  'durability_check_interval_positive',
] as const;

export type TimingRule = (typeof TIMING_RULES)[number];

/** One broken rule: its stable name, the settings it relates (so a caller can name their sources) and why it matters. */
export type TimingProblem = { rule: TimingRule; settings: readonly TimingSetting[]; message: string };

const SETTINGS: readonly TimingSetting[] = ['heartbeatMs', 'heartbeatTtlMs', 'claimTtlMs', 'sendTimeoutMs', 'settleMarginMs', 'dedupMarginMs', 'dedupWindowMs', 'durabilityCheckMs'];

/**
 * Every rule the settings break, in a fixed order; empty when they are consistent. Each rule is written as the
 * condition that must hold, so a NaN (which makes every comparison false) breaks it instead of slipping through.
 */
export function timingProblems(settings: TimingSettings): TimingProblem[] {
  const s = settings;
  const problems: TimingProblem[] = [];
  const broken = (rule: TimingRule, related: readonly TimingSetting[], message: string) => problems.push({ rule, settings: related, message });

  const notWhole = SETTINGS.filter((name) => !Number.isSafeInteger(s[name]) || s[name] < 0);
  if (notWhole.length > 0) {
    broken('settings_are_whole_milliseconds', notWhole, `${notWhole.map((name) => `${name} (${String(s[name])})`).join(', ')} must be whole, non-negative numbers of milliseconds`);
  }

  // A zero interval would refresh the heartbeat in a busy loop against Redis.
  if (!(s.heartbeatMs > 0)) broken('heartbeat_interval_positive', ['heartbeatMs'], `the heartbeat interval (${s.heartbeatMs} ms) must be positive`);

  // A beat at t keeps the key until t + TTL; the next one is due at t + interval but can be late (timer jitter, a
  // GC pause, a slow Redis round trip). TTL >= 2 x interval lets the next beat be late by up to one whole interval
  // before the key lapses; anything shorter makes one late beat read as a death, and another worker takes over
  // the effects of a worker that is alive and may be sending.
  if (!(s.heartbeatTtlMs >= 2 * s.heartbeatMs)) {
    broken('heartbeat_ttl_at_least_twice_interval', ['heartbeatTtlMs', 'heartbeatMs'], `the heartbeat TTL (${s.heartbeatTtlMs} ms) must be at least twice the heartbeat interval (2 x ${s.heartbeatMs} = ${2 * s.heartbeatMs} ms), so one late beat does not make a live worker look dead`);
  }

  // A claim that lapses while its holder is still inside a send lets a second sender in beside the first.
  if (!(s.claimTtlMs > s.sendTimeoutMs)) {
    broken('claim_ttl_exceeds_send_timeout', ['claimTtlMs', 'sendTimeoutMs'], `the claim TTL (${s.claimTtlMs} ms) must exceed the send timeout (${s.sendTimeoutMs} ms), so a live but slow sender keeps its claim until its send is aborted`);
  }

  // The settle margin bounds how long bytes written before a sender's deadline (or death) take to reach Stripe
  // and be processed; it is counted from an instant after which that sender writes nothing, so it does not depend
  // on the heartbeat or the claim and no other setting fixes its size (that is a judgement about the network; the
  // default is 10 s). What is never consistent is zero: a lookup would be believed at the very instant a request
  // may still be on the wire, and a resend could land beside it. (The send watchdog also spends half of it as the
  // grace before it kills a stalled sender, which a zero margin would reduce to nothing.)
  if (!(s.settleMarginMs > 0)) {
    broken('settle_margin_positive', ['settleMarginMs'], `the settle margin (${s.settleMarginMs} ms) must be positive, or a lookup that finds nothing is believed while the request may still be on its way`);
  }

  // A resend under the same key is safe only while Stripe still remembers the key when the resend arrives: it is
  // started up to (window - dedup margin) after the dispatch and may take a send timeout plus the settle margin
  // to land, so the margin must cover both.
  if (!(s.dedupMarginMs > s.sendTimeoutMs + s.settleMarginMs)) {
    broken('dedup_margin_exceeds_send_timeout_plus_settle_margin', ['dedupMarginMs', 'sendTimeoutMs', 'settleMarginMs'], `the dedup margin (${s.dedupMarginMs} ms) must exceed the send timeout plus the settle margin (${s.sendTimeoutMs} + ${s.settleMarginMs} = ${s.sendTimeoutMs + s.settleMarginMs} ms), or a resend may reach Stripe after it forgot the idempotency key`);
  }

  // A margin as long as the window leaves no time in which a resend under the same key is allowed at all.
  if (!(s.dedupMarginMs < s.dedupWindowMs)) {
    broken('dedup_margin_below_dedup_window', ['dedupMarginMs', 'dedupWindowMs'], `the dedup margin (${s.dedupMarginMs} ms) must be smaller than the target's idempotency-key window (${s.dedupWindowMs} ms)`);
  }

  // A zero interval would re-read Redis's persistence settings in a busy loop.
  if (!(s.durabilityCheckMs > 0)) {
    broken('durability_check_interval_positive', ['durabilityCheckMs'], `the durability check interval (${s.durabilityCheckMs} ms) must be positive`);
  }

  return problems;
}
