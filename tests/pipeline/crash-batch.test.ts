// The two seams the pipeline tests stand on, checked in-process: INTERLOCK_CRASH_BATCH (the kill comes when the Nth
// send reaches the crash point, with the N-1 before it held there, and at the latest 100 ms before the first held
// send's deadline), and slowDownOf (a rate limit is recognised on an error or any of its causes).
import { describe, expect, it } from 'vitest';
import { loadConfig, slowDownOf, StripeUnavailable, type SendContext, type Target } from '../../src/interlock.js';
import { withCrashAt } from '../../src/targets/crash-injection.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';

function context(ms: number): SendContext {
  const deadline = performance.now() + ms;
  return { requestId: null, timeLeftMs: () => Math.floor(deadline - performance.now()), beforeWrite: async () => undefined };
}

function counted(): { target: Target; applied: string[] } {
  const inner = createMemoryTarget({ tier: 1, sendTimeoutMs: 5_000 });
  const applied: string[] = [];
  return { applied, target: { ...inner, apply: async (effectId, effect, ctx) => (applied.push(effectId), inner.apply(effectId, effect, ctx)) } };
}

const effect = { kind: 'refund', paymentIntent: 'pi_1', amount: 100 } as const;
const settle = (promise: Promise<unknown>) => promise.then(() => 'sent', (error: Error) => error.message);

describe('INTERLOCK_CRASH_BATCH', () => {
  it('before_send: the first sends wait at the point, the Nth kills, and none of them reaches the target', async () => {
    const { target, applied } = counted();
    let kills = 0;
    const crashing = withCrashAt(target, 'before_send', { batch: 3, kill: () => (kills += 1) });
    const first = settle(crashing.apply('e1', effect, context(5_000)));
    const second = settle(crashing.apply('e2', effect, context(5_000)));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(kills).toBe(0);
    const third = settle(crashing.apply('e3', effect, context(5_000)));
    expect(await Promise.all([first, second, third])).toEqual(Array(3).fill('the process was killed before the send'));
    expect([kills, applied]).toEqual([1, []]);
    // A send after the batch goes through as if nothing were armed.
    expect(await settle(crashing.apply('e4', effect, context(5_000)))).toBe('sent');
  });

  it('after_send: every send of the batch reaches the target before the kill', async () => {
    const { target, applied } = counted();
    let kills = 0;
    const crashing = withCrashAt(target, 'after_send', { batch: 2, kill: () => (kills += 1) });
    const answers = await Promise.all([settle(crashing.apply('e1', effect, context(5_000))), settle(crashing.apply('e2', effect, context(5_000)))]);
    expect(answers).toEqual(Array(2).fill('the process was killed after the send'));
    expect([kills, applied]).toEqual([1, ['e1', 'e2']]);
  });

  it('kills 100 ms before the first held send\'s deadline when fewer sends than the batch arrive', async () => {
    const { target } = counted();
    let killedAfter = -1;
    const began = performance.now();
    const crashing = withCrashAt(target, 'before_send', { batch: 5, kill: () => (killedAfter = performance.now() - began) });
    expect(await settle(crashing.apply('e1', effect, context(400)))).toBe('the process was killed before the send');
    expect(killedAfter).toBeGreaterThanOrEqual(250);
    expect(killedAfter).toBeLessThan(400);
  });

  it('is read from the environment, 1 by default, a whole number from 1', () => {
    expect(loadConfig({}).crashBatch).toBe(1);
    expect(loadConfig({ INTERLOCK_CRASH_AT: 'before_send', INTERLOCK_CRASH_BATCH: '12' }).crashBatch).toBe(12);
    expect(() => loadConfig({ INTERLOCK_CRASH_BATCH: '0' })).toThrow(/INTERLOCK_CRASH_BATCH/);
    expect(loadConfig({}).rateLimitBackoffMs).toBe(1_000);
    expect(() => loadConfig({ INTERLOCK_RATE_LIMIT_BACKOFF_MS: '-5' })).toThrow(/INTERLOCK_RATE_LIMIT_BACKOFF_MS/);
  });
});

describe('slowDownOf', () => {
  const limited = new StripeUnavailable('rate limited', { stripeStatus: 429, stripeCode: 'rate_limit', requestId: null, retryAfterMs: 2_000, rateLimited: true, outcomeUnknown: true });
  it('finds a rate limit on the error or any cause, with the wait Stripe named', () => {
    expect(slowDownOf(limited)).toEqual({ retryAfterMs: 2_000 });
    expect(slowDownOf(new Error('premise read failed', { cause: new Error('wrapped', { cause: limited }) }))).toEqual({ retryAfterMs: 2_000 });
    expect(slowDownOf(new StripeUnavailable('limited', { stripeStatus: 429, stripeCode: null, requestId: null, retryAfterMs: null, rateLimited: true, outcomeUnknown: false }))).toEqual({ retryAfterMs: null });
  });
  it('is null for anything else: a 503, a plain error, a value that is not an error', () => {
    expect(slowDownOf(new StripeUnavailable('down', { stripeStatus: 503, stripeCode: null, requestId: null, retryAfterMs: 1_000, rateLimited: false, outcomeUnknown: true }))).toBeNull();
    expect(slowDownOf(new Error('x'))).toBeNull();
    expect(slowDownOf({ rateLimited: true })).toBeNull();
  });
});
