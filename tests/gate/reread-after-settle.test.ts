// Rule: the re-read of an effect's facts after it settles on a payment a dispute marked (settle-5's `reread`) is
// upkeep for the receipt, not part of the answer: the money has moved and the effect is settled, so the submit
// answers at once, whatever Stripe's reads take (each may take its whole read budget); and a sender that closes
// waits for a re-read under way rather than leave it half done.
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryTarget, openStores, startSender, type FactsApplier, type MemoryTarget, type Sender, type Stores } from '../../src/interlock.js';
import { approvalTerms, refundProposal, testConfig, testKey } from '../support/harness.js';

const keyPair = testKey();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** A facts applier whose re-read takes `ms` (Stripe slow to answer), recording what it was asked and when it ended. */
function slowFacts(ms: number) {
  const asked: string[] = [];
  const finished: string[] = [];
  const facts = {
    async reread(effectId: string) {
      asked.push(effectId);
      await new Promise((resolve) => setTimeout(resolve, ms));
      finished.push(effectId);
      return [];
    },
  } as unknown as FactsApplier;
  return { facts, asked, finished };
}

async function rig(facts: FactsApplier): Promise<{ stores: Stores; sender: Sender; target: MemoryTarget; redis: Redis }> {
  const config = testConfig();
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const redis = new Redis(config.redisUrl);
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key, redis });
  const sender = await startSender(stores, target, { facts });
  closers.push(async () => {
    await sender.close();
    await stores.close();
    // SCAN, not KEYS: others use this Redis.
    for await (const page of redis.scanStream({ match: `${config.keyPrefix}:*`, count: 1000 })) {
      const keys = page as string[];
      if (keys.length > 0) await redis.unlink(...keys);
    }
    await redis.quit();
  });
  // A dispute event came for the payment (note-fact-1.lua's mark), as if while a refund on it was in flight.
  await redis.hset(stores.keys.subject('payment:pi_1'), 'factAt', Date.now());
  return { stores, sender, target, redis };
}

describe('the re-read after a settle on a payment a dispute marked', () => {
  it('does not hold the answer of a committed refund while Stripe is slow to answer the re-read', async () => {
    const slow = slowFacts(3_000);
    const { stores, sender } = await rig(slow.facts);
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const started = performance.now();
    const answer = await sender.gate.submit(refundProposal({ approval: terms.id }));
    const took = performance.now() - started;
    expect(answer.outcome).toBe('COMMITTED');
    expect(slow.asked).toEqual([answer.effectId]);
    expect(took).toBeLessThan(1_500);
  });

  it('is waited for by a sender that closes', async () => {
    const slow = slowFacts(1_000);
    const { stores, sender } = await rig(slow.facts);
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const answer = await sender.gate.submit(refundProposal({ approval: terms.id }));
    await sender.close();
    expect(slow.finished).toEqual([answer.effectId]);
  });
});
