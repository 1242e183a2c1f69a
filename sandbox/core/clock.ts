// The sandbox's only reader of wall time and its only scheduler. Object timestamps use sandbox time, which tests
// can push forward (to age refunds or idempotency keys); timers run on real time scaled by the delay profile.
import type { DelayName, DelayProfile } from './delays.js';

export interface Clock {
  /** Sandbox time in ms: wall time plus every `advance` so far. */
  nowMs(): number;
  /** Sandbox time in Unix seconds, as Stripe objects carry it. */
  nowSeconds(): number;
  /** Wall time in ms, for transport concerns (signature timestamps, timeouts) that must match the peer's clock. */
  wallMs(): number;
  advance(seconds: number): void;
  /** Runs `task` after the profile's delay `name`, multiplied by `factor` (used for backoff). */
  after(name: DelayName, task: () => void, factor?: number): void;
  /** Runs `task` after exactly `ms`, for delays a test asked for explicitly. */
  afterMs(ms: number, task: () => void): void;
  delayMs(name: DelayName): number;
  cancelAll(): void;
}

export interface ClockDeps {
  profile: DelayProfile;
  onTaskError(error: unknown): void;
}

export function createClock({ profile, onTaskError }: ClockDeps): Clock {
  let offsetMs = 0;
  const timers = new Set<NodeJS.Timeout>();

  const afterMs = (ms: number, task: () => void): void => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      try {
        task();
      } catch (error) {
        onTaskError(error);
      }
    }, Math.max(0, ms));
    timers.add(timer);
  };

  return {
    nowMs: () => Date.now() + offsetMs,
    nowSeconds: () => Math.floor((Date.now() + offsetMs) / 1000),
    wallMs: () => Date.now(),
    advance: (seconds) => {
      offsetMs += seconds * 1000;
    },
    after: (name, task, factor = 1) => afterMs(profile[name] * factor, task),
    afterMs,
    delayMs: (name) => profile[name],
    cancelAll: () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
