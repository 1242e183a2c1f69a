// The sandbox's request log (what tests count Stripe calls with): bounded to the last `limit` requests, in arrival
// order, numbered without gaps across the bound and across clear().
import { describe, expect, it } from 'vitest';
import { createRequestLog } from '../http/request-log.js';

const request = (index: number) => ({ method: 'GET', path: `/v1/refunds/re_${index}`, idempotencyKey: null });

describe('request log', () => {
  it('keeps exactly the last `limit` requests, oldest first, however far past the limit it has run', () => {
    const log = createRequestLog(100);
    // Past the limit by less than, exactly, and more than one limit: every point where older entries are dropped.
    for (const total of [99, 100, 101, 199, 200, 201, 350, 1_000]) {
      const fresh = createRequestLog(100);
      for (let index = 1; index <= total; index += 1) fresh.begin(request(index));
      const listed = fresh.list();
      expect(listed.length).toBe(Math.min(total, 100));
      expect(listed.map((entry) => entry.seq)).toEqual(Array.from({ length: listed.length }, (_, index) => total - listed.length + 1 + index));
      expect(listed.at(-1)?.path).toBe(`/v1/refunds/re_${total}`);
    }
    for (let index = 1; index <= 250; index += 1) log.begin(request(index));
    // `after` counts from any seq, also one already dropped.
    expect(log.list(240).map((entry) => entry.seq)).toEqual([241, 242, 243, 244, 245, 246, 247, 248, 249, 250]);
    expect(log.list(10).map((entry) => entry.seq)[0]).toBe(151);
  });

  it('hands out copies: a status written on a logged request shows in later lists, a change to a listed copy does not', () => {
    const log = createRequestLog(3);
    const logged = log.begin(request(1));
    log.list()[0]!.status = 500;
    expect(log.list()[0]?.status).toBeNull();
    logged.status = 200;
    expect(log.list()[0]?.status).toBe(200);
  });

  it('clear() empties the log and numbering goes on', () => {
    const log = createRequestLog(3);
    for (let index = 1; index <= 5; index += 1) log.begin(request(index));
    log.clear();
    expect(log.list()).toEqual([]);
    expect(log.begin(request(6)).seq).toBe(6);
    expect(log.list().map((entry) => entry.seq)).toEqual([6]);
  });
});
