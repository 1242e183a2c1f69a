// Rule: the catch-up's window (back to the horizon as of the last pass that ended, so the effects that left the horizon
// while the deployment was down are re-read once more) is kept until the passes have read all of it (README "Missed
// webhooks"). It is the deployment's, kept in the reconcile cursor's hash: a restart of the facts process, or another
// process's pass between two of the catch-up's, goes on over it instead of narrowing it; the catch-up starts at its
// oldest effect, wherever the passes before stood (a cursor an earlier version wrote, with no window, included); and an
// effect of it whose re-read failed is read again by the passes after, though it lies beyond their horizon.
import { expect, it } from 'vitest';
import { startReconciler, type ReconcileReport } from '../../queues/facts.js';
import { createFacts, StripeUnavailable, type FactsApplier } from '../../src/interlock.js';
import { commitRefunds, committedWhileDown, countingReader, HOUR, tracing, until, worldPerTest } from './reconcile-support.js';

const each = worldPerTest();

const rateLimited = () => new StripeUnavailable('Could not read GET /v1/refunds from Stripe (rate limited (429 rate_limit)); nothing changed.', { stripeStatus: 429, stripeCode: 'rate_limit', requestId: null, retryAfterMs: null, rateLimited: true, outcomeUnknown: false });

/** `facts` whose re-read of `effectId` throws `error()` the first time only. */
function failingOnce(facts: FactsApplier, tried: string[], effectId: string | undefined, error: () => Error): FactsApplier {
  let failed = false;
  return tracing(facts, tried, (id) => {
    if (id === effectId && !failed) {
      failed = true;
      throw error();
    }
  });
}

it('a catch-up stopped by a rate limit, then a restart of the facts process: the restarted catch-up goes on over the same window', async () => {
  const { a, ids, redis, keys } = await committedWhileDown(each, 4);
  const tried: string[] = [];
  const facts = failingOnce(createFacts(a.stores, countingReader().reader), tried, ids[1], rateLimited);
  const passes: ReconcileReport[] = [];
  const first = startReconciler(a.stores, facts, { intervalMs: HOUR, horizonMs: HOUR, onPass: (report) => passes.push(report) });
  try {
    await until(() => passes.length > 0);
    expect(passes[0]?.stopped ?? '').toContain('rate-limited');
  } finally {
    await first.close();
  }
  // The process restarts (a deploy); the Retry-After has passed by the time its catch-up asks. The rate-limited pass
  // ended (endedAt is now): a window taken from it would hold the horizon only.
  await redis.hset(keys.reconcileCursor, { notBefore: '0' });
  const again: ReconcileReport[] = [];
  const restarted = startReconciler(a.stores, facts, { intervalMs: HOUR, horizonMs: HOUR, onPass: (report) => again.push(report) });
  try {
    await until(() => again.length > 0);
  } finally {
    await restarted.close();
  }
  expect(new Set(tried)).toEqual(new Set(ids));
});

it("another process's pass between two passes of a catch-up reads over the catch-up's window, so no effect of it is skipped", async () => {
  const { world, a, ids } = await committedWhileDown(each, 4);
  const b = await world.node('b');
  // Two refunds committed just now, within the horizon.
  await commitRefunds(world, a, 'pi_2', 2);
  const tried: string[] = [];
  const passes: ReconcileReport[] = [];
  const catchingUp = startReconciler(a.stores, failingOnce(createFacts(a.stores, countingReader().reader), tried, ids[1], rateLimited), { intervalMs: HOUR, horizonMs: HOUR, onPass: (report) => passes.push(report) });
  const other = startReconciler(b.stores, tracing(createFacts(b.stores, countingReader().reader), tried), { intervalMs: HOUR, horizonMs: HOUR, atStart: false, limit: 1 });
  try {
    await until(() => passes.length > 0);
    expect(passes[0]?.stopped ?? '').toContain('rate-limited');
    // The other process's pass (one effect at most) runs before the catch-up goes on.
    expect(await other.pass()).toMatchObject({ skipped: null, effects: 1 });
    for (let i = 0; i < 3; i += 1) await catchingUp.pass();
  } finally {
    await other.close();
    await catchingUp.close();
  }
  for (const effectId of ids) expect(tried).toContain(effectId);
});

it('an effect of the window whose re-read failed once (Stripe answered 500) is re-read by the passes after, beyond their horizon', async () => {
  const { a, ids } = await committedWhileDown(each, 4);
  const tried: string[] = [];
  const passes: ReconcileReport[] = [];
  const server = () => new StripeUnavailable('Could not read GET /v1/refunds from Stripe (500 api_error); nothing changed.', { stripeStatus: 500, stripeCode: 'api_error', requestId: null, retryAfterMs: null, rateLimited: false, outcomeUnknown: false });
  const reconciler = startReconciler(a.stores, failingOnce(createFacts(a.stores, countingReader().reader), tried, ids[1], server), { intervalMs: HOUR, horizonMs: HOUR, onPass: (report) => passes.push(report) });
  try {
    await until(() => passes.length > 0);
    expect(passes[0]).toMatchObject({ unread: 1, stopped: null });
    // A pass over the horizon only (the window was read through) reads it again.
    expect(await reconciler.pass()).toMatchObject({ skipped: null, effects: 1, unread: 0 });
  } finally {
    await reconciler.close();
  }
  expect(tried.filter((effectId) => effectId === ids[1])).toHaveLength(2);
});

it('a catch-up over a cursor an earlier version left part way through the window starts at its oldest effect', async () => {
  const { a, ids, redis, keys, now } = await committedWhileDown(each, 4);
  // The cursor as the version before wrote it (no window field): the last pass before the deployment went down stopped
  // after the second effect. What Stripe did to the first two while it was down is unread too.
  await redis.hset(keys.reconcileCursor, { position: JSON.stringify({ list: 'bound', score: now - 3 * HOUR + 1, member: ids[1] }) });
  const tried: string[] = [];
  const passes: ReconcileReport[] = [];
  const restarted = startReconciler(a.stores, tracing(createFacts(a.stores, countingReader().reader), tried), { intervalMs: HOUR, horizonMs: HOUR, onPass: (report) => passes.push(report) });
  try {
    await until(() => passes.length > 0);
    expect(passes).toMatchObject([{ effects: 4, stopped: null }]);
    // The window is read through: the next pass reads the horizon only.
    expect(await restarted.pass()).toMatchObject({ effects: 0, skipped: null });
  } finally {
    await restarted.close();
  }
  expect(tried).toEqual(ids);
});
