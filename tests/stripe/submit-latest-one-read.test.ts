// Rule: a refund sent by an effects job (submitLatest) costs at most two Stripe calls on the happy path (one premise
// read, one create): when the job carries an earlier proposal and the latest recorded one moves the same money, the
// facts read ahead serve the premise check AND the target's pre-send remainder check, as they did before 1db06b2.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProposalRecorder, effectIdFor, openStores, startSender } from '../../src/interlock.js';
import { createRefundTarget } from '../../src/stripe/refund-target.js';
import { approvalTerms, testConfig, testKey } from '../support/harness.js';
import { callsSince, mark, pay, startStripeWorld, type StripeWorld } from './stripe-support.js';
import { Redis } from 'ioredis';

let world: StripeWorld;
beforeAll(async () => { world = await startStripeWorld(); });
afterAll(async () => { await world.close(); });

describe('diff2: submitLatest with a re-decided proposal', () => {
  it('sends a re-approved refund at one read and one create', async () => {
    const config = testConfig({ keyPrefix: `rv-diff2-${Math.random().toString(36).slice(2, 8)}` });
    const key = testKey();
    const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: key.key });
    const target = createRefundTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs });
    const sender = await startSender(stores, target);
    try {
      const { paymentIntent } = await pay(world.stripe);
      const small = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 1_000 });
      await stores.approvals.grant(small);
      const carried = { requestId: `case-${paymentIntent}`, agent: 'support-bot', approval: small.id, premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer' } };
      const id = effectIdFor({ requestId: carried.requestId, effect: carried.effect });
      const record = createProposalRecorder(stores);
      await record(carried);
      expect((await sender.gate.submitLatest(id, carried)).answer.outcome).toBe('REFUSED:lease');
      const big = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 5_000 });
      await stores.approvals.grant(big);
      expect((await record({ ...carried, approval: big.id })).status).toBe('recorded');

      const since = await mark(world.sandbox);
      const run = await sender.gate.submitLatest(id, carried);
      expect(run.answer.outcome).toBe('COMMITTED');
      expect(await callsSince(world.sandbox, since)).toEqual([`GET /v1/payment_intents/${paymentIntent}`, 'POST /v1/refunds']);
    } finally {
      await sender.close();
      await stores.close();
      const redis = new Redis(config.redisUrl);
      const stale = await redis.keys(`${config.keyPrefix}:*`);
      if (stale.length > 0) await redis.del(...stale);
      await redis.quit();
    }
  });
});
