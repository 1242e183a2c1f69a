// Rule: the decisions backoff honours a wait asked for up to MAX_ASKED_WAIT_MS (15 min); an endless one (an error's
// retryAfterMs of Infinity, from a header of many digits) asks for more than that, so the job waits the cap, not the
// plain exponential backoff as if nothing were asked.
import { describe, expect, it } from 'vitest';
import { askedWaitOf, decisionBackoff, MAX_ASKED_WAIT_MS } from '../../queues/decisions.js';

const asked = (ms: number) => Object.assign(new Error('429'), { retryAfterMs: ms });

describe('an endless wait asked for', () => {
  it('is the 15 min cap, on the error or on its cause', () => {
    expect(askedWaitOf(asked(Number.POSITIVE_INFINITY))).toBe(MAX_ASKED_WAIT_MS);
    expect(decisionBackoff(1, 2_000, asked(Number.POSITIVE_INFINITY))).toBe(MAX_ASKED_WAIT_MS);
    expect(decisionBackoff(1, 2_000, new Error('wrapped', { cause: asked(Number.POSITIVE_INFINITY) }))).toBe(MAX_ASKED_WAIT_MS);
  });

  it('while a wait that is no wait (NaN, negative, -Infinity) is still ignored', () => {
    for (const ms of [Number.NaN, -5, Number.NEGATIVE_INFINITY]) expect(decisionBackoff(1, 2_000, asked(ms))).toBe(2_000);
  });
});
