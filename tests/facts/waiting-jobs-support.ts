// What the tests of facts jobs that wait for Redis share: a durability monitor they turn on and off, and a refund old
// enough that only its events (or the watch list) can bring its later facts to its receipt.
import { startFactsWorker, type FactsDurability } from '../../queues/facts.js';
import { InterlockError } from '../../src/interlock.js';
import { pay, type FactsRig } from './facts-rig.js';

export const DAY_MS = 86_400_000;

/** A durability monitor a test turns on and off (`state.durable`), counting its refusals. */
export function switchedDurability() {
  const state = { durable: false, refusals: 0 };
  const durability: FactsDurability = {
    assertDurable() {
      if (state.durable) return;
      state.refusals += 1;
      throw new InterlockError('redis_not_durable', 'Redis can lose what it acknowledges (appendonly no)');
    },
    async rechecked() {},
  };
  return { state, durability };
}

/**
 * A paid $100 with a gated $20 refund, its own events applied, bound a month ago (older than the reconciler's
 * horizon, and off the watch list); `now`, Redis's time then.
 */
export async function monthOldRefund(rig: FactsRig): Promise<{ charge: string; effectId: string; now: number }> {
  const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
  const effectId = await rig.refund(paymentIntent, 2_000);
  await rig.sandbox.control.idle();
  const warm = startFactsWorker(rig.stores, rig.facts);
  await rig.drained();
  await warm.close();
  const { keys } = rig.stores;
  const now = await rig.stores.journal.serverTime();
  const monthAgo = now - 30 * DAY_MS;
  await rig.redis.zadd(keys.effectsByTime, monthAgo, effectId);
  if ((await rig.redis.zscore(keys.watch, effectId)) !== null) await rig.redis.zadd(keys.watch, monthAgo, effectId);
  return { charge, effectId, now };
}
