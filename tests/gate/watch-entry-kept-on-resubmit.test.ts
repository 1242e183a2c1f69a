// Rule: the watch list holds a late settle at the time it was written (keys.ts `watch`), so a reconciliation over a
// window holding that time finds it. A later submit of the same request id (a client retry, answered from the record)
// carries a watch-list check in its binding step, which adds an entry only where none is: it never moves the entry
// forward, so retrying an old request cannot push its effect out of a window, nor re-score it on every retry.
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { createKeys } from '../../src/redis/keys.js';
import { REDIS_URL, refundProposal, type World } from '../support/harness.js';
import { gateWorld, grant } from './gate-support.js';

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

it('resubmitting a late-settled effect keeps its watch-list place at its settle time', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const terms = await grant(a);
  const proposal = refundProposal({ approval: terms.id });
  const first = await a.gate.submit(proposal);
  expect(first.outcome).toBe('COMMITTED');
  const keys = createKeys(world.config.keyPrefix);
  const redis = new Redis(REDIS_URL);
  try {
    const now = await a.journal.now();
    // Bound 30 min ago, settled late 15 min ago: on the watch list at its settle time.
    await redis.zadd(keys.effectsByTime, now - 30 * 60_000, first.effectId);
    const settledAt = now - 15 * 60_000;
    await redis.zadd(keys.watch, settledAt, first.effectId);
    expect((await a.gate.submit(proposal)).outcome).toBe('DUPLICATE_IGNORED');
    expect(Number(await redis.zscore(keys.watch, first.effectId))).toBe(settledAt);
  } finally {
    redis.disconnect();
  }
});
