// Rule: effects whose re-read always fails never keep the scheduled passes from the effects after them, with the
// catch-up's window open as without it: every other pass moves past a run of FAILED_IN_A_ROW failures (queues/facts.ts),
// so the passes read through the window and close it however many of its effects still fail.
// Rule: an effect of the window whose re-read failed, at a place beyond the horizon, is put back on the watch list once
// the passes have gone past it, and only then: the passes re-read it after the window closes, for a horizon from when
// it was put back; put back, it is within the horizon and is not put back again, so it never stands again and again
// ahead of where the passes go on from. A failure within the horizon is read by the passes after like any other.
import { expect, it } from 'vitest';
import { startReconciler, type ReconcileReport } from '../../queues/facts.js';
import { createFacts, StripeUnavailable, type FactsApplier } from '../../src/interlock.js';
import { sleep } from '../support/harness.js';
import { commitRefunds, countingReader, HOUR, tracing, worldPerTest } from './reconcile-support.js';

const each = worldPerTest();

const server = () => new StripeUnavailable('Could not read GET /v1/refunds from Stripe (500 api_error); nothing changed.', { stripeStatus: 500, stripeCode: 'api_error', requestId: null, retryAfterMs: null, rateLimited: false, outcomeUnknown: false });

/**
 * Five refunds on pi_bad then three on pi_good, bound `agoMs` before now (in that order), and the deployment's last
 * pass ended `endedAgoMs` before now; re-reads of pi_bad's refunds always fail (Stripe answers 500). The reconciler's
 * pass at start (the catch-up, which opens the window) and `more` passes after it, `limit` effects each when given.
 */
async function failingRunThenGood(agoMs: number, endedAgoMs: number, more: number, limit?: number) {
  const world = await each.open();
  const a = await world.node('a');
  const bad = await commitRefunds(world, a, 'pi_bad', 5);
  const good = await commitRefunds(world, a, 'pi_good', 3);
  const redis = each.redis();
  const { keys } = a.stores;
  const now = await a.journal.serverTime();
  for (const [index, effectId] of [...bad, ...good].entries()) await redis.zadd(keys.effectsByTime, String(now - agoMs + index), effectId);
  await redis.hset(keys.reconcileCursor, { failedInARow: '0', startedAt: String(now - endedAgoMs - 1_000), endedAt: String(now - endedAgoMs), notBefore: '0' });
  const failing = new Set(bad);
  const tried: string[] = [];
  const passes: ReconcileReport[] = [];
  const facts: FactsApplier = tracing(createFacts(a.stores, countingReader().reader), tried, (id) => {
    if (failing.has(id)) throw server();
  });
  const reconciler = startReconciler(a.stores, facts, { intervalMs: HOUR, horizonMs: HOUR, ...(limit === undefined ? {} : { limit }), onPass: (report) => passes.push(report) });
  try {
    while (passes.length === 0) await sleep(20);
    for (let i = 0; i < more; i += 1) expect(await reconciler.pass()).toMatchObject({ skipped: null });
  } finally {
    await reconciler.close();
  }
  return { bad, good, tried, redis, keys, now };
}

it('five always-failing effects of a window beyond the horizon: the passes move past them, read the rest, close the window, and re-read the five after it', async () => {
  // Bound three hours ago, while the deployment was down (its last pass ended four hours ago): only the window holds them.
  const { bad, good, tried, redis, keys, now } = await failingRunThenGood(3 * HOUR, 4 * HOUR, 8);
  for (const effectId of good) expect(tried).toContain(effectId);
  expect(await redis.hget(keys.reconcileCursor, 'catchUpFrom')).toBeNull();
  // Put back on the watch list once the passes went past them (from then, not before: a horizon from there bounds it),
  // so the passes after the window re-read them though they were bound beyond the horizon.
  const afterGood = tried.slice(tried.lastIndexOf(good[2] ?? '') + 1);
  for (const effectId of bad) {
    expect(afterGood).toContain(effectId);
    expect(Number(await redis.zscore(keys.watch, effectId))).toBeGreaterThanOrEqual(now);
  }
});

it('five always-failing effects within the horizon, after an ordinary restart: the window it opens is read through, and they stay off the watch list', async () => {
  // Bound a minute ago; the last pass ended a second ago.
  const { bad, good, tried, redis, keys } = await failingRunThenGood(60_000, 1_000, 8);
  for (const effectId of good) expect(tried).toContain(effectId);
  expect(await redis.hget(keys.reconcileCursor, 'catchUpFrom')).toBeNull();
  // Within the horizon the passes re-read them where they were bound.
  for (const effectId of bad) expect(await redis.zscore(keys.watch, effectId)).toBeNull();
});

it('an always-failing effect on the watch list beyond the horizon, with passes of one effect each: put back once, it never keeps the passes from the rest', async () => {
  const world = await each.open();
  const a = await world.node('a');
  const [stuck] = await commitRefunds(world, a, 'pi_bad', 1);
  const good = await commitRefunds(world, a, 'pi_good', 2);
  if (stuck === undefined) throw new Error('no effect committed');
  const redis = each.redis();
  const { keys } = a.stores;
  const now = await a.journal.serverTime();
  // Bound three hours ago and watched from then (a settle that came late), while the deployment was down.
  for (const [index, effectId] of [stuck, ...good].entries()) await redis.zadd(keys.effectsByTime, String(now - 3 * HOUR + index), effectId);
  await redis.zadd(keys.watch, String(now - 3 * HOUR), stuck);
  await redis.hset(keys.reconcileCursor, { failedInARow: '0', startedAt: String(now - 4 * HOUR - 1_000), endedAt: String(now - 4 * HOUR), notBefore: '0' });
  const tried: string[] = [];
  const passes: ReconcileReport[] = [];
  const facts = tracing(createFacts(a.stores, countingReader().reader), tried, (id) => {
    if (id === stuck) throw server();
  });
  const reconciler = startReconciler(a.stores, facts, { intervalMs: HOUR, horizonMs: HOUR, limit: 1, onPass: (report) => passes.push(report) });
  try {
    while (passes.length === 0) await sleep(20);
    for (let i = 0; i < 7; i += 1) expect(await reconciler.pass()).toMatchObject({ skipped: null });
  } finally {
    await reconciler.close();
  }
  for (const effectId of good) expect(tried).toContain(effectId);
  expect(await redis.hget(keys.reconcileCursor, 'catchUpFrom')).toBeNull();
  expect(Number(await redis.zscore(keys.watch, stuck))).toBeGreaterThanOrEqual(now);
});
