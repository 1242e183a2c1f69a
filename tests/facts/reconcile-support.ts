// Shared wiring for the reconciler's tests over the gate world (memory target): committed refunds on payments of the
// test's choosing, and a Stripe reader that counts every call a re-read makes and answers 404 for payments it is told
// Stripe no longer knows, as the Stripe adapter does (src/stripe/errors.ts: `Rejected`).
import { Redis } from 'ioredis';
import { afterEach } from 'vitest';
import { Rejected, type FactsApplier, type StripeReader } from '../../src/interlock.js';
import { refundProposal, sleep, type TestNode, type World } from '../support/harness.js';
import { FACTS, gateWorld, grant } from '../gate/gate-support.js';

export const HOUR = 3_600_000;

/**
 * A gate world for each test (`open`), and a Redis connection of the test's own to read and change its keys (`redis`),
 * both closed after the test.
 */
export function worldPerTest(): { open(): Promise<World>; redis(): Redis } {
  let world: World | null = null;
  let redis: Redis | null = null;
  afterEach(async () => {
    await redis?.quit();
    redis = null;
    await world?.close();
    world = null;
  });
  return {
    async open() {
      world = await gateWorld();
      return world;
    },
    redis() {
      if (world === null) throw new Error('open the world first');
      redis ??= new Redis(world.config.redisUrl);
      return redis;
    },
  };
}

export type Calls = { refundsOf: string[]; disputesOf: string[]; creditsOf: string[]; refund: string[] };

/** A Stripe reader that answers nothing new, counts every call, and answers 404 for the payments in `gone`. */
export function countingReader(gone: ReadonlySet<string> = new Set()): { reader: StripeReader; calls: Calls } {
  const calls: Calls = { refundsOf: [], disputesOf: [], creditsOf: [], refund: [] };
  const missing = (pi: string) => new Rejected(`Stripe refused GET /v1/refunds?payment_intent=${pi} (404 resource_missing: No such payment_intent: '${pi}')`, { code: 'resource_missing', status: 404 });
  return {
    calls,
    reader: {
      async refund(id) {
        calls.refund.push(id);
        return null;
      },
      async refundsOf(pi) {
        calls.refundsOf.push(pi);
        if (gone.has(pi)) throw missing(pi);
        return [];
      },
      async disputesOf(pi) {
        calls.disputesOf.push(pi);
        if (gone.has(pi)) throw missing(pi);
        return [];
      },
      async creditsOf(customer) {
        calls.creditsOf.push(customer);
        return [];
      },
    },
  };
}

/** Commits `count` $1 refunds on payment `pi` through node's gate; returns their effect ids in commit order. */
export async function commitRefunds(world: World, node: TestNode, pi: string, count: number): Promise<string[]> {
  world.target.world.set(`payment:${pi}`, { ...FACTS });
  const { id } = await grant(node, { scope: `payment:${pi}`, maxUses: count, capCents: 100 * count });
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const answer = await node.gate.submit(refundProposal({ approval: id, amount: 100, paymentIntent: pi }));
    if (answer.outcome !== 'COMMITTED') throw new Error(`refund on ${pi} did not commit: ${answer.outcome}`);
    ids.push(answer.effectId);
  }
  return ids;
}

/** `facts` with its re-reads recorded in `tried`, in order, and answered by `instead` where it throws. */
export function tracing(facts: FactsApplier, tried: string[], instead: (effectId: string) => void = () => undefined): FactsApplier {
  return {
    ...facts,
    reread: async (effectId) => {
      tried.push(effectId);
      instead(effectId);
      return facts.reread(effectId);
    },
  };
}

/**
 * `count` refunds committed three hours ago, an hour after the deployment's last pass ended (four hours ago): with a
 * horizon of an hour, only the catch-up's window (back to the horizon as of that pass's end) holds them.
 */
export async function committedWhileDown(each: ReturnType<typeof worldPerTest>, count: number) {
  const world = await each.open();
  const a = await world.node('a');
  const ids = await commitRefunds(world, a, 'pi_1', count);
  const redis = each.redis();
  const { keys } = a.stores;
  const now = await a.journal.serverTime();
  for (const [index, effectId] of ids.entries()) await redis.zadd(keys.effectsByTime, String(now - 3 * HOUR + index), effectId);
  await redis.hset(keys.reconcileCursor, { failedInARow: '0', startedAt: String(now - 4 * HOUR - 1_000), endedAt: String(now - 4 * HOUR), notBefore: String(now - 4 * HOUR) });
  return { world, a, ids, redis, keys, now };
}

/** Waits until `done` (the test's own timeout bounds it). */
export async function until(done: () => boolean): Promise<void> {
  while (!done()) await sleep(20);
}
