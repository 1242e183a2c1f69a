// Rule: I3 (DESIGN §3), through the Stripe refund target and the sandbox: two refunds of one payment decided on
// `refunded_by_others: 0` never both go out. The second, judged while the first is at Stripe, waits for it, reads the
// payment again and is refused on what it finds (REFUNDS_HOLD). Both were sent before: $80 refunded on two tickets.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { createRefundTarget, REFUND_FACTS } from '../../src/stripe/refund-target.js';
import { approvalTerms, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { pay, sleep, startStripeWorld, type StripeWorld } from './stripe-support.js';

let world: StripeWorld;
let config: Config;
const key = testKey();
const nodes: TestNode[] = [];

beforeAll(async () => {
  world = await startStripeWorld();
  config = testConfig({ keyPrefix: `two-refunds-${randomBytes(4).toString('hex')}`, sendTimeoutMs: 3_000, claimTtlMs: 6_000, settleMarginMs: 150, dedupMarginMs: 10_000 });
});
afterAll(async () => {
  for (const node of nodes) await node.close().catch(() => undefined);
  await world.close();
  const redis = new Redis(config.redisUrl);
  const stale = await redis.keys(`${config.keyPrefix}:*`);
  if (stale.length > 0) await redis.del(...stale);
  await redis.quit();
});

describe('two gated refunds of one payment at once', () => {
  it('the second refund, decided on refunded_by_others = 0, is not sent while the first one is in flight on the same payment', async () => {
    const target = createRefundTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs });
    const a = await startNode({ config, target, key: key.key, workerId: 'a' });
    const b = await startNode({ config, target, key: key.key, workerId: 'b' });
    nodes.push(a, b);
    const { paymentIntent } = await pay(world.stripe, 'pm_card_visa', 10_000);
    const effect = { kind: 'refund' as const, paymentIntent, amount: 4_000, reason: 'requested_by_customer' as const };
    // Two support cases about the same complaint: each decided "nobody else refunded" and asks for $40.
    const proposals = [];
    for (const name of ['ticket-1', 'ticket-2']) {
      const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 4_000 });
      await a.approvals.grant(terms);
      const draft = { requestId: `${name}-${paymentIntent}`, agent: 'support-bot', approval: terms.id, premises: {}, effect };
      const premises = await target.readFacts(a.gate.effectIdOf(draft), effect, REFUND_FACTS, { timeoutMs: 2_000 });
      expect(premises).toMatchObject({ refunded_by_others: 0, chargebacks: [] });
      proposals.push({ ...draft, premises });
    }
    // The first refund's POST is slow at Stripe (held before it runs), so it is in flight when the second is judged.
    await world.sandbox.control.slowDown({ path: '/v1/refunds', method: 'POST', ms: 1_000, count: 1 });
    const first = a.gate.submit(proposals[0]);
    await sleep(300);
    const second = await b.gate.submit(proposals[1]);
    const firstAnswer = await first;
    const refunds = (await world.stripe.refunds.list({ payment_intent: paymentIntent })).data.filter((refund) => refund.status !== 'failed' && refund.status !== 'canceled');
    expect({ first: firstAnswer.outcome, second: second.outcome, refunded: refunds.reduce((sum, refund) => sum + refund.amount, 0) }).toEqual({ first: 'COMMITTED', second: 'REFUSED:stale_premise', refunded: 4_000 });
    expect(second.reason).toContain('refunded_by_others');
  });
});
