// The Redis clock as a worker can know it without asking. Entries carry Redis time (`at`), and a send deadline
// recorded in Redis must never be earlier than the instant the worker really stops sending. Every script reply
// carries Redis's own `now`; since Redis read that time after the request left the worker, `now - sentAt` bounds
// the offset between the two clocks from above. The estimate is the tightest such bound over recent replies, so
// it errs late by at most a round trip, never early, and entries can be sealed without a round trip for the time.
//
// The same replies measure this host's wall clock against Redis's (hostClockOffset): Stripe signs each webhook
// delivery with its own time and the route checks it against this host's wall clock, so a host whose clock is off by
// more than 300 s refuses every delivery, and the Redis clock is the one other clock the process reads all the time.
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

/**
 * This host's wall clock compared with Redis's: `offsetMs` is host minus Redis (ms; positive: this host's clock is
 * ahead), within half a round trip; `measuredMsAgo`: how long ago (monotonic ms) the Redis time it rests on was read.
 */
export type HostClockOffset = { offsetMs: number; measuredMsAgo: number };

/**
 * The last Redis time any clock of this process observed, as the middle of what that reply bounds it to, on the
 * monotonic clock (`redisMinusMono`: Redis time minus performance.now()), and the wall clock read with it. One per
 * process: the wall clock compared is the host's, whichever connection's reply measured it.
 */
let lastRedisReading: { redisMinusMono: number; at: number; wallNow: () => number } | null = null;

/**
 * This host's wall clock minus Redis's, now: the wall clock read now against Redis's time as last read, carried
 * forward on the monotonic clock (so a step of this host's clock since that reading shows at once), or null when no
 * Redis time has been read in this process yet (a process that runs only the webhook route reads Redis's time only
 * when /metrics is scraped).
 */
export function hostClockOffset(): HostClockOffset | null {
  const reading = lastRedisReading;
  if (reading === null) return null;
  const now = performance.now();
  return { offsetMs: reading.wallNow() - (now + reading.redisMinusMono), measuredMsAgo: now - reading.at };
}

/** How far this host's wall clock may be from Redis's before it is warned of (ms): a fifth of Stripe's 300 s tolerance. */
export const HOST_CLOCK_WARN_MS = 60_000;

/** Stripe's webhook tolerance as the route applies it (s): a delivery signed further from this host's clock is refused. */
const STRIPE_TOLERANCE_S = 300;

/**
 * The host clock's offset in words: "this host's clock is 400 s ahead of Redis's" (rounded to the second), with how long
 * ago Redis's time was read when that was more than a minute ago.
 */
export function hostClockWords(offset: HostClockOffset): string {
  const seconds = Math.round(Math.abs(offset.offsetMs) / 1000);
  const how = seconds === 0 ? "agrees with Redis's to the second" : `is ${seconds} s ${offset.offsetMs > 0 ? 'ahead of' : 'behind'} Redis's`;
  const ago = offset.measuredMsAgo > 60_000 ? ` (Redis's time as read ${Math.round(offset.measuredMsAgo / 1000)} s ago, carried forward on this host's monotonic clock)` : '';
  return `this host's clock ${how}${ago}`;
}

/** The warning for a host clock more than HOST_CLOCK_WARN_MS from Redis's, or null for one within it. */
export function hostClockWarning(offset: HostClockOffset): string | null {
  if (Math.abs(offset.offsetMs) <= HOST_CLOCK_WARN_MS) return null;
  return `${hostClockWords(offset)}; Stripe's webhook signatures are checked against this host's clock within ${STRIPE_TOLERANCE_S} s, so deliveries are refused as stale_timestamp once it is off by more: fix time sync (NTP/chrony) on this host (or on Redis's, if this host's clock is the right one).`;
}

const hostClockWatchers = new Set<(offset: HostClockOffset) => void>();

/**
 * Calls `listener` with this host's clock offset at every Redis time any clock of this process observes, until the
 * function returned is called. For a warning; the listener limits how often it writes.
 */
export function watchHostClock(listener: (offset: HostClockOffset) => void): () => void {
  hostClockWatchers.add(listener);
  return () => hostClockWatchers.delete(listener);
}

/** `wallNow`: this host's wall clock (ms since the epoch), which hostClockOffset compares with Redis's; tests give theirs. */
export function createRedisClock(options: { window?: number; maxAgeMs?: number; wallNow?: () => number } = {}): RedisClock {
  const window = options.window ?? 32;
  const maxAgeMs = options.maxAgeMs ?? 10_000;
  const wallNow = options.wallNow ?? (() => Date.now());
  const samples: { offset: number; at: number; lower: number }[] = [];
  return {
    mark: () => performance.now(),
    observe(redisNow, sentAt) {
      if (!Number.isFinite(redisNow)) return;
      const at = performance.now();
      const sample = { offset: redisNow - sentAt, at, lower: redisNow - at };
      lastRedisReading = { redisMinusMono: (sample.offset + sample.lower) / 2, at, wallNow };
      if (hostClockWatchers.size > 0) {
        const offset = hostClockOffset();
        if (offset !== null) for (const watcher of hostClockWatchers) watcher(offset);
      }
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
