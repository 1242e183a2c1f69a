// Rule: the catch-up at a facts process's start reads back to the horizon as of the last pass's end (README "Missed
// webhooks") whether or not a catch-up window is open: one its passes left part way is kept (never narrowed) and the
// passes start it over at its oldest effect, so what Stripe did, while the facts processes were down, to an effect its
// passes had gone past is read once more. That includes an effect settled while they were down whose place lies
// behind where they stood: recovery's commit of an effect bound long before puts it on the watch list, which a
// position on the effects-by-time index has gone past.
import { expect, it } from 'vitest';
import { startReconciler, type ReconcileReport } from '../../queues/facts.js';
import { createFacts } from '../../src/interlock.js';
import { commitRefunds, committedWhileDown, countingReader, HOUR, tracing, until, worldPerTest } from './reconcile-support.js';

const each = worldPerTest();

it('a catch-up window left open part way, then the facts processes down longer than the horizon: the restarted catch-up starts it over and re-reads an effect committed meanwhile behind its position', async () => {
  const { world, a, ids, redis, keys, now } = await committedWhileDown(each, 4);
  const [late] = await commitRefunds(world, a, 'pi_9', 1);
  if (late === undefined) throw new Error('no effect committed');
  const tried: string[] = [];
  const first: ReconcileReport[] = [];
  // The catch-up opens the window and its pass reads two of its four effects (limit 2): the window is left open, the
  // position on the effects-by-time index.
  const partway = startReconciler(a.stores, tracing(createFacts(a.stores, countingReader().reader), tried), { intervalMs: HOUR, horizonMs: HOUR, limit: 2, onPass: (report) => first.push(report) });
  try {
    await until(() => first.length > 0);
  } finally {
    await partway.close();
  }
  expect(tried).toEqual([ids[0], ids[1]]);
  const window = Number(await redis.hget(keys.reconcileCursor, 'catchUpFrom'));
  expect(window).toBeGreaterThan(0);

  // Then, by the clock: that pass ended 2.5 hours ago and the facts processes were down until now, while the gate
  // workers went on. The late refund, bound 3.5 hours ago and in flight when that pass went by, was committed by
  // recovery 2 hours ago, long after its binding: it went on the watch list, behind the position.
  await redis.zadd(keys.effectsByTime, String(now - 3.5 * HOUR), late);
  await redis.zadd(keys.watch, String(now - 2 * HOUR), late);
  await redis.hset(keys.reconcileCursor, { startedAt: String(now - 2.5 * HOUR - 1_000), endedAt: String(now - 2.5 * HOUR), notBefore: '0' });

  const restartedTried: string[] = [];
  const again: ReconcileReport[] = [];
  const restarted = startReconciler(a.stores, tracing(createFacts(a.stores, countingReader().reader), restartedTried), { intervalMs: HOUR, horizonMs: HOUR, onPass: (report) => again.push(report) });
  try {
    await until(() => again.length > 0);
  } finally {
    await restarted.close();
  }
  // Kept (it reached further back than the horizon as of the last pass's end), started over at its oldest effect, and
  // read through: the late refund and the two effects read before the downtime are read once more.
  expect(again).toMatchObject([{ stopped: null }]);
  expect(restartedTried).toEqual([late, ...ids]);
  expect(await redis.hget(keys.reconcileCursor, 'catchUpFrom')).toBeNull();
});

it("a catch-up that finds a window open starting after the horizon as of the last pass's end widens it to there", async () => {
  const { a, ids, redis, keys, now } = await committedWhileDown(each, 4);
  // A window open from two hours ago (a later start than the refunds of three hours ago), its passes part way: they
  // stand after the first refund. The last pass ended four hours ago (committedWhileDown), so the horizon as of then
  // reaches back five hours.
  const from = String(now - 2 * HOUR);
  const position = JSON.stringify({ list: 'bound', score: now - 3 * HOUR, member: ids[0] });
  await redis.hset(keys.reconcileCursor, { catchUpFrom: from, position, positionWindow: `${from} ${position}` });
  const tried: string[] = [];
  const passes: ReconcileReport[] = [];
  const restarted = startReconciler(a.stores, tracing(createFacts(a.stores, countingReader().reader), tried), { intervalMs: HOUR, horizonMs: HOUR, onPass: (report) => passes.push(report) });
  try {
    await until(() => passes.length > 0);
  } finally {
    await restarted.close();
  }
  expect(passes).toMatchObject([{ stopped: null }]);
  expect(tried).toEqual(ids);
  expect(await redis.hget(keys.reconcileCursor, 'catchUpFrom')).toBeNull();
});
