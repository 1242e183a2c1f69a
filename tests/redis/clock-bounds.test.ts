// Rule: the worker's view of Redis's clock brackets it: estimate() is never earlier than Redis's time and floor()
// never later. floor() dates a premise read's start for the dispatch step (a refund's REREAD check, lib.lua): a floor
// later than Redis's time would date the read after a landing it missed, and the refund would go out on a stale read.
// A Redis clock that steps (an NTP step, a failover to a server whose clock differs) is seen in the next reply that
// contradicts an earlier one: the earlier samples go, so neither bound keeps the old clock (floor() held it for 10 s).
import { describe, expect, it } from 'vitest';
import { createRedisClock } from '../../src/redis/clock.js';

describe('RedisClock bounds', () => {
  it('knows nothing before the first reply', () => {
    const clock = createRedisClock();
    expect([clock.estimate(), clock.floor()]).toEqual([null, null]);
  });

  it('keeps floor() at or below and estimate() at or above the Redis time of every reply it observed, whatever the round trip', async () => {
    const clock = createRedisClock();
    // A simulated Redis whose clock runs 5 s ahead of this process, answering after a delay of its own: Redis reads
    // its time part way through the round trip, as it does when it runs the script.
    const redisNow = () => performance.now() + 5_000;
    for (const [before, after] of [[3, 1], [0, 12], [7, 7], [1, 0]] as const) {
      const sentAt = clock.mark();
      await new Promise((resolve) => setTimeout(resolve, before));
      const readAt = redisNow();
      await new Promise((resolve) => setTimeout(resolve, after));
      clock.observe(readAt, sentAt);
      const truth = redisNow();
      const floor = clock.floor() ?? Infinity;
      const estimate = clock.estimate() ?? -Infinity;
      expect(floor).toBeLessThanOrEqual(truth);
      expect(estimate).toBeGreaterThanOrEqual(Math.floor(truth));
      // Tight enough to be of use: within the longest round trip (and a millisecond of rounding) of the truth.
      expect(truth - floor).toBeLessThan(30);
    }
  });

  it('forgets its samples on reset()', () => {
    const clock = createRedisClock();
    clock.observe(1_000, clock.mark());
    clock.reset();
    expect(clock.floor()).toBeNull();
  });

  for (const step of [-800, 60_000]) {
    it(`keeps both bounds true once Redis's clock steps ${step < 0 ? 'back' : 'forward'} ${Math.abs(step)} ms, from the next reply on`, async () => {
      const clock = createRedisClock();
      let offset = 5_000;
      const redisNow = () => performance.now() + offset;
      const ask = async () => {
        const sentAt = clock.mark();
        await new Promise((resolve) => setTimeout(resolve, 1));
        const readAt = redisNow();
        await new Promise((resolve) => setTimeout(resolve, 1));
        clock.observe(readAt, sentAt);
      };
      for (let i = 0; i < 3; i += 1) await ask();
      offset += step;
      await ask();
      const truth = redisNow();
      expect(clock.floor() ?? Infinity).toBeLessThanOrEqual(truth);
      expect(clock.estimate() ?? -Infinity).toBeGreaterThanOrEqual(Math.floor(truth));
    });
  }
});
