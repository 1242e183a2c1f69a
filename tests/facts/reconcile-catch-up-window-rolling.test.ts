// Rule: during a rolling upgrade from the version before the catch-up window was kept in the reconcile cursor
// (b5e34dc), what a process of that version writes to the cursor never narrows the window nor drops it (README
// "Rolling upgrades"): the window's passes go on only from a position a pass of that window wrote, and a window opens
// back to where the passes stand when a catch-up of that version left them part way through its window. The process
// of the version before is stood in for by the cursor hash as its end-reconcile-pass-2.lua wrote it: `position`,
// `failedInARow`, `startedAt`, `notBefore` and `endedAt`, never `catchUpFrom` nor `positionWindow`.
import { expect, it } from 'vitest';
import { startReconciler, type ReconcileReport } from '../../queues/facts.js';
import type { Redis } from 'ioredis';
import { createFacts } from '../../src/interlock.js';
import type { Keys } from '../../src/redis/keys.js';
import type { TestNode } from '../support/harness.js';
import { commitRefunds, committedWhileDown, countingReader, HOUR, tracing, until, worldPerTest } from './reconcile-support.js';

const each = worldPerTest();

it("a pass of the version before, between two passes of the catch-up, does not narrow the window: the catch-up's next pass starts it over", async () => {
  const { world, a, ids, redis, keys } = await committedWhileDown(each, 4);
  // Two refunds committed just now, within the horizon.
  const recent = await commitRefunds(world, a, 'pi_2', 2);
  const tried: string[] = [];
  const passes: ReconcileReport[] = [];
  // The catch-up opens the window; its first pass reads one effect (limit 1: a pass that stops part way).
  const reconciler = startReconciler(a.stores, tracing(createFacts(a.stores, countingReader().reader), tried), { intervalMs: HOUR, horizonMs: HOUR, limit: 1, onPass: (report) => passes.push(report) });
  try {
    await until(() => passes.length > 0);
    expect(tried).toEqual([ids[0]]);
    expect(await redis.hget(keys.reconcileCursor, 'catchUpFrom')).not.toBeNull();

    // A process of the version before runs its pass on the schedule: it reads its own horizon (it knows no window), is
    // rate-limited at the second recent refund and writes where it stopped, within the horizon.
    const score = await redis.zscore(keys.effectsByTime, recent[0] ?? '');
    const ended = await a.journal.serverTime();
    await redis.hset(keys.reconcileCursor, { position: JSON.stringify({ list: 'bound', score: Number(score), member: recent[0] }), failedInARow: '0', startedAt: String(ended - 100), notBefore: '0', endedAt: String(ended) });

    // The catch-up's passes go on until the window is read through (closed).
    for (let i = 0; i < 10 && (await redis.hget(keys.reconcileCursor, 'catchUpFrom')) !== null; i += 1) await reconciler.pass();
    expect(await redis.hget(keys.reconcileCursor, 'catchUpFrom')).toBeNull();
  } finally {
    await reconciler.close();
  }
  // Every effect of the window was re-read before it closed.
  for (const effectId of ids) expect(tried).toContain(effectId);
});

/**
 * A reconciler of this version started on `a`'s deployment: its first pass (the catch-up) reads through, closes the
 * window, and re-reads every effect of `owed`.
 */
async function firstPassReadsThrough(a: TestNode, redis: Redis, keys: Keys, owed: readonly string[]): Promise<void> {
  const tried: string[] = [];
  const passes: ReconcileReport[] = [];
  const reconciler = startReconciler(a.stores, tracing(createFacts(a.stores, countingReader().reader), tried), { intervalMs: HOUR, horizonMs: HOUR, onPass: (report) => passes.push(report) });
  try {
    await until(() => passes.length > 0);
    expect(passes[0]?.stopped ?? null).toBeNull();
    expect(await redis.hget(keys.reconcileCursor, 'catchUpFrom')).toBeNull();
  } finally {
    await reconciler.close();
  }
  for (const effectId of owed) expect(tried).toContain(effectId);
}

it('a catch-up the version before left part way is taken up by the catch-up of this version: the rest of its window is re-read', async () => {
  const { a, ids, redis, keys } = await committedWhileDown(each, 4);
  // The catch-up of the version before (its window in memory only) read the first refund, was rate-limited at the
  // second, and ended its pass: endedAt is now, and the position stands in its window, three hours back.
  const score = await redis.zscore(keys.effectsByTime, ids[0] ?? '');
  const ended = await a.journal.serverTime();
  await redis.hset(keys.reconcileCursor, { position: JSON.stringify({ list: 'bound', score: Number(score), member: ids[0] }), failedInARow: '0', startedAt: String(ended - 100), notBefore: '0', endedAt: String(ended) });

  // The upgrade stops it; a process of this version starts on the same deployment.
  await firstPassReadsThrough(a, redis, keys, ids.slice(1));
});

it('a catch-up the version before left part way on the watch list is taken up from there: the watch list after it and the effects-by-time index are read', async () => {
  const { a, ids, redis, keys, now } = await committedWhileDown(each, 4);
  // Two of the refunds were committed long after their binding: the watch list holds them, by their commit's time.
  await redis.zadd(keys.watch, String(now - 3 * HOUR + 100), ids[0] ?? '', String(now - 3 * HOUR + 200), ids[1] ?? '');
  // The catch-up of the version before read the first of them, was rate-limited at the second, and ended its pass.
  const ended = await a.journal.serverTime();
  await redis.hset(keys.reconcileCursor, { position: JSON.stringify({ list: 'watch', score: now - 3 * HOUR + 100, member: ids[0] }), failedInARow: '0', startedAt: String(ended - 100), notBefore: '0', endedAt: String(ended) });

  await firstPassReadsThrough(a, redis, keys, ids.slice(1));
});
