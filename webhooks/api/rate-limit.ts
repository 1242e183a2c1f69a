// A per-token rate limit: a token bucket per caller, refilled continuously. It lives in the process, so N API
// processes allow N times the rate in total; it guards the service against a runaway tool, not a determined attacker
// (who would need a token first). The clock is an input, so tests move it: a monotonic one (performance.now()) unless
// told, since the wall clock steps (NTP, a VM restored from a snapshot), and a clock given that went back counts as no
// time passed, never as tokens taken back.
import { performance } from 'node:perf_hooks';

export type RateLimit = { perMinute: number; burst: number };

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export function createRateLimiter(limit: RateLimit, now: () => number = () => performance.now()) {
  const perMs = limit.perMinute / 60_000;
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take(key: string): RateDecision {
      const at = now();
      const bucket = buckets.get(key) ?? { tokens: limit.burst, at };
      bucket.tokens = Math.min(limit.burst, bucket.tokens + Math.max(0, at - bucket.at) * perMs);
      bucket.at = at;
      buckets.set(key, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return { allowed: true };
      }
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000)) };
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
