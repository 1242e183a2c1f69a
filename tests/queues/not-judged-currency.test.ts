// Rule: a not_judged alert writes the proposal's amount in the currency it would move in and records it: a credit's is
// the configured credit currency (INTERLOCK_CREDIT_CURRENCY: 1000 JPY, never $10.00); a refund's is its payment's, which
// its `currency` premise records as proposed (5000 JPY); a refund proposed without one (the effect was never judged,
// nothing else says it) is of a currency unknown, never called dollars.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createEffectsQueue, startEffectsWorker } from '../../queues/effects.js';
import { createMemoryTarget, InterlockError, openStores, startSender, type MemoryTarget } from '../../src/interlock.js';
import { approvalTerms, refundProposal, testConfig, testKey } from '../support/harness.js';

const config = testConfig({ keyPrefix: `tnj${randomBytes(6).toString('hex')}`, creditCurrency: 'jpy' });
const closers: (() => Promise<void>)[] = [];

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  const redis = new Redis(config.redisUrl);
  for (const pattern of [`${config.keyPrefix}:*`, `{${config.keyPrefix}-queues}:*`]) {
    const stale = await redis.keys(pattern);
    if (stale.length > 0) await redis.del(...stale);
  }
  await redis.quit();
});

/** A target whose every premise read Stripe refuses (a revoked key): each job fails for good before it is judged. */
function keyRefused(): MemoryTarget {
  const inner = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  return {
    ...inner,
    async readFacts() {
      throw new InterlockError('target_misconfigured', 'Stripe refused the API key (401): the key may have been rotated.');
    },
  };
}

describe('a not_judged alert, in the currency of the money it is about', () => {
  it('writes a credit in the configured credit currency, a refund in its currency premise\'s, and a refund without one as of a currency unknown', async () => {
    const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
    const sender = await startSender(stores, keyRefused());
    const queue = createEffectsQueue(stores, { backoffMs: 50 });
    const worker = startEffectsWorker(stores, sender, { concurrency: 2 });
    closers.push(() => stores.close(), () => sender.close(), () => queue.close(), () => worker.close(true));

    const credit = approvalTerms({ scope: 'customer:cus_jpy', capCents: 100_000 });
    const refund = approvalTerms();
    const yen = approvalTerms({ scope: 'payment:pi_yen', capCents: 100_000 });
    await stores.approvals.grant(credit);
    await stores.approvals.grant(refund);
    await stores.approvals.grant(yen);
    const credited = await queue.propose({ requestId: `case-${randomBytes(4).toString('hex')}`, agent: 'support-bot', approval: credit.id, premises: { subscription_status: null, incident_compensation: 0 }, effect: { kind: 'credit', customer: 'cus_jpy', amount: 1_000, incident: 'INC-jpy' } });
    const refunded = await queue.propose(refundProposal({ approval: refund.id, amount: 2_000 }));
    const yenRefunded = await queue.propose(refundProposal({ approval: yen.id, paymentIntent: 'pi_yen', amount: 5_000, premises: { chargebacks: [], refunded_by_others: 0, currency: 'jpy' } }));

    const alertOf = (effectId: string) => stores.alerts.get(`not_judged:${effectId}`);
    await expect.poll(async () => (await alertOf(credited.effectId))?.kind ?? null, { timeout: 10_000 }).toBe('not_judged');
    await expect.poll(async () => (await alertOf(refunded.effectId))?.kind ?? null, { timeout: 10_000 }).toBe('not_judged');
    await expect.poll(async () => (await alertOf(yenRefunded.effectId))?.kind ?? null, { timeout: 10_000 }).toBe('not_judged');
    const creditAlert = await alertOf(credited.effectId);
    expect(creditAlert?.currency).toBe('jpy');
    expect(creditAlert?.sentence).toContain(`Proposal ${credited.effectId} (customer:cus_jpy, 1000 JPY) was recorded but not judged`);
    const refundAlert = await alertOf(refunded.effectId);
    expect(refundAlert?.currency).toBeNull();
    expect(refundAlert?.sentence).toContain(`Proposal ${refunded.effectId} (payment:pi_1, 2000 (minor units, currency unknown)) was recorded but not judged`);
    const yenAlert = await alertOf(yenRefunded.effectId);
    expect(yenAlert?.currency).toBe('jpy');
    expect(yenAlert?.sentence).toContain(`Proposal ${yenRefunded.effectId} (payment:pi_yen, 5000 JPY) was recorded but not judged`);
  });
});
