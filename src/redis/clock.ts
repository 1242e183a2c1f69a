// The Redis clock as a worker can know it without asking. Entries carry Redis time (`at`), and a send deadline
// recorded in Redis must never be earlier than the instant the worker really stops sending. Every script reply
// carries Redis's own `now`; since Redis read that time after the request left the worker, `now - sentAt` bounds
// the offset between the two clocks from above. The estimate is the tightest such bound over recent replies, so
// it errs late by at most a round trip, never early, and entries can be sealed without a round trip for the time.
import { performance } from 'node:perf_hooks';

export type RedisClock = {
  /** Local monotonic ms (performance.now()) to note before a request whose reply will carry Redis time. */
  mark(): number;
  /** Feeds one reply: Redis `now` and the mark taken before the request was sent. */
  observe(redisNow: number, sentAt: number): void;
  /** An upper bound of Redis time now, or null before the first reply. */
  estimate(): number | null;
  /**
   * A lower bound of Redis time now, or null before the first reply: Redis read its `now` before its reply arrived,
   * so now + (the local time since the reply was observed) is never later than Redis's time.
   */
  floor(): number | null;
  /** Forgets every sample (after Redis refused a time as implausible: its clock may have stepped). */
  reset(): void;
};

export function createRedisClock(options: { window?: number; maxAgeMs?: number } = {}): RedisClock {
  const window = options.window ?? 32;
  const maxAgeMs = options.maxAgeMs ?? 10_000;
  const samples: { offset: number; at: number; lower: number }[] = [];
  return {
    mark: () => performance.now(),
    observe(redisNow, sentAt) {
      if (!Number.isFinite(redisNow)) return;
      const at = performance.now();
      const sample = { offset: redisNow - sentAt, at, lower: redisNow - at };
      // A reply that contradicts an earlier one (its upper bound below that one's lower bound, or its lower bound above
      // that one's upper bound) proves Redis's clock stepped: the earlier samples describe a clock that no longer is,
      // and kept, they would hold floor() ahead of Redis (a step back) or estimate() behind it (a step forward).
      for (let index = samples.length - 1; index >= 0; index -= 1) {
        const old = samples[index];
        if (old !== undefined && (old.lower > sample.offset || old.offset < sample.lower)) samples.splice(index, 1);
      }
      samples.push(sample);
      if (samples.length > window) samples.shift();
    },
    estimate() {
      const now = performance.now();
      while (samples.length > 0 && (samples[0]?.at ?? now) < now - maxAgeMs) samples.shift();
      if (samples.length === 0) return null;
      let best = Infinity;
      for (const sample of samples) best = Math.min(best, sample.offset);
      return Math.ceil(now + best);
    },
    floor() {
      const now = performance.now();
      while (samples.length > 0 && (samples[0]?.at ?? now) < now - maxAgeMs) samples.shift();
      if (samples.length === 0) return null;
      let best = -Infinity;
      for (const sample of samples) best = Math.max(best, sample.lower);
      return Math.floor(now + best);
    },
    reset() {
      samples.length = 0;
    },
  };
}
