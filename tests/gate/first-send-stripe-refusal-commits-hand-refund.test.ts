// Rule: a first dispatch (neverSent: its chain holds no DISPATCHED) has nothing of its own at Stripe but what its one
// send made; when Stripe definitely refuses that send (a 400), nothing of the effect moved, so the effect ends refused,
// and no lookup takes a refund labelled by hand with the effect's id for its landing (f96d84a skips that lookup only
// for a refusal before the network, `left` false; 4e98485 counts such a refund as someone else's in the facts).
// Setup: $100 payment; a person refunds $30 by hand, labelled with the effect id (gate.effectIdOf of the proposal, as
// in tests/stripe/labelled-before-first-send.test.ts); the charge is charged back; the agent submits a $30 refund
// decided on no refund premise. The pre-send check passes ($70 refundable), the POST leaves, Stripe answers 400
// charge_disputed. Expected REFUSED:target_error. Observed COMMITTED_ON_QUERY with the hand refund as evidence.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { createRefundTarget } from '../../src/stripe/refund-target.js';
import { approvalTerms, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { callsSince, mark, pay, startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';

let world: StripeWorld;
let config: Config;
let key: ReturnType<typeof testKey>;
const nodes: TestNode[] = [];

beforeAll(async () => {
  world = await startStripeWorld();
  config = testConfig({ sendTimeoutMs: 1_000, settleMarginMs: 300 });
  key = testKey();
});
afterAll(async () => {
  await Promise.all(nodes.map((node) => node.close().catch(() => undefined)));
  await world.close();
  const redis = new Redis(config.redisUrl);
  const stale = await redis.keys(`${config.keyPrefix}:*`);
  if (stale.length > 0) await redis.del(...stale);
  await redis.quit();
});

it("a first send Stripe refuses (400) is not committed on a refund labelled by hand with the effect's id", async () => {
  const { paymentIntent, charge } = await pay(world.stripe);
  const a = await startNode({ config, target: createRefundTarget(world.client, { sendTimeoutMs: 1_000 }), key: key.key, workerId: 'g4f' });
  nodes.push(a);
  const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 10_000, maxUses: 5 });
  await a.approvals.grant(terms);
  const proposal = { requestId: `case-g4f-${Date.now()}`, agent: 'support-bot', approval: terms.id, premises: {}, effect: { kind: 'refund', paymentIntent, amount: 3_000 } };
  const effectId = a.gate.effectIdOf(proposal);
  const hand = await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 3_000, metadata: { interlock_effect_id: effectId } });
  await world.sandbox.control.openDispute({ charge, kind: 'chargeback' } as never);

  const since = await mark(world.sandbox);
  const answer = await a.gate.submit(proposal);
  expect((await callsSince(world.sandbox, since)).filter((call) => call.startsWith('POST /v1/refunds'))).toHaveLength(1);
  expect((await world.stripe.refunds.list({ payment_intent: paymentIntent })).data.map((refund) => refund.id)).toEqual([hand.id]);
  const receipt = await a.journal.receipt(effectId);
  const committed = receipt?.entries.find((entry) => entry.kind === 'COMMITTED') as { found?: unknown } | undefined;
  expect({ outcome: answer.outcome, evidence: committed?.found ?? null }).toEqual({ outcome: expect.stringMatching(/^REFUSED/), evidence: null });
});
