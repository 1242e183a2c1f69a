// Rule: a host wall clock stepped back (an NTP step, a VM restored from a snapshot) locks no caller out. The API's rate
// limiter and the failed sign-in counter refill on a monotonic clock unless given one, and a clock given that went
// back counts as no time passed: refilled by (now - last) on Date.now(), a step back of an hour was a refill of minus
// an hour's tokens, and every recently active token was answered 429 with a Retry-After of most of an hour.
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRateLimiter } from '../../webhooks/api/rate-limit.js';
import { createFailedSignIns, FAILED_SIGN_INS } from '../../webhooks/ui/failed-sign-ins.js';

const HOUR = 3_600_000;

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the API rate limiter when the wall clock steps back', () => {
  it('lets in a caller well under its limit after a 2 min step back, and answers no Retry-After of most of an hour after a 1 h one', () => {
    let now = 1_800_000_000_000;
    const limiter = createRateLimiter({ perMinute: 600, burst: 600 }, () => now);
    expect(limiter.take('agent')).toEqual({ allowed: true });
    now += 1_000;
    expect(limiter.take('agent')).toEqual({ allowed: true });
    now -= 120_000;
    expect(limiter.take('agent')).toEqual({ allowed: true });
    now -= HOUR;
    expect(limiter.take('agent')).toEqual({ allowed: true });
  });

  it('still refuses past the burst: a step back adds no tokens', () => {
    let now = 1_800_000_000_000;
    const limiter = createRateLimiter({ perMinute: 60, burst: 2 }, () => now);
    expect([limiter.take('agent'), limiter.take('agent')]).toEqual([{ allowed: true }, { allowed: true }]);
    now -= HOUR;
    expect(limiter.take('agent')).toEqual({ allowed: false, retryAfterSeconds: 1 });
  });

  it('measures on a monotonic clock unless given one: a wall clock stepped back changes nothing', () => {
    const wall = Date.now();
    let mono = performance.now();
    const date = vi.spyOn(Date, 'now').mockReturnValue(wall);
    vi.spyOn(performance, 'now').mockImplementation(() => mono);
    const limiter = createRateLimiter({ perMinute: 600, burst: 600 });
    expect(limiter.take('agent')).toEqual({ allowed: true });
    date.mockReturnValue(wall - HOUR);
    mono += 1_000;
    expect(limiter.take('agent')).toEqual({ allowed: true });
  });
});

describe('the failed sign-in counter when the wall clock steps back', () => {
  it('lets an address whose bucket ran dry try again once the refill is due, not an hour later', () => {
    let now = 1_800_000_000_000;
    const counter = createFailedSignIns(FAILED_SIGN_INS, () => now);
    for (let tries = 0; tries < FAILED_SIGN_INS.burst; tries += 1) counter.failed('203.0.113.7', `wrong-${tries}`);
    expect(counter.waitSeconds('203.0.113.7')).toBe(6);
    now -= HOUR;
    expect(counter.waitSeconds('203.0.113.7')).toBe(6);
    // One refill (10 a minute: 6 s) after the step, the address may try once more.
    now += 6_000;
    expect(counter.waitSeconds('203.0.113.7')).toBe(0);
  });

  it('counts on a monotonic clock unless given one', () => {
    const wall = Date.now();
    let mono = performance.now();
    const date = vi.spyOn(Date, 'now').mockReturnValue(wall);
    vi.spyOn(performance, 'now').mockImplementation(() => mono);
    const counter = createFailedSignIns(FAILED_SIGN_INS);
    for (let tries = 0; tries < FAILED_SIGN_INS.burst; tries += 1) counter.failed('203.0.113.8', `wrong-${tries}`);
    date.mockReturnValue(wall - HOUR);
    mono += 6_000;
    expect(counter.waitSeconds('203.0.113.8')).toBe(0);
  });
});
