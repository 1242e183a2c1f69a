// Rule: an effect none of whose requests ever left (take-over's neverSent on a chain with one DISPATCHED, or a first
// send) has nothing of its own at Stripe: when its send is refused by the target's own checks before anything leaves,
// the refusal stands, and no lookup takes a refund labelled by hand with the effect's id for the effect's landing.
// Setup as tests/gate/recovered-first-send-labelled.test.ts: worker a's first send is held back (nothing leaves); a
// person refunds the whole payment by hand and labels it with the effect id from the IN_FLIGHT answer. The proposal
// decided on no refund premise (premises {}), so the neverSent re-check passes; the resend's remainder check (read with
// neverSent: the hand refund is someone else's) finds 0 refundable and refuses before anything is sent. Expected: the
// effect ends refused (nothing of it moved). Observed: COMMITTED_ON_QUERY with the hand-made refund as its evidence
// (the approval charged for money the agent never moved; the receipt says the effect's refund returned the money).
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { createRefundTarget } from '../../src/stripe/refund-target.js';
import { approvalTerms, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { pay, recoverUntilSettled, startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';

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

const heldBack = (): Config => ({ ...config, redisMinReplicas: 1, redisWaitMs: 50 }) as Config;

it('a neverSent recovery whose resend is refused does not commit a refund labelled by hand as the effect\'s landing', async () => {
  const { paymentIntent } = await pay(world.stripe);
  const a = await startNode({ config: heldBack(), target: createRefundTarget(world.client, { sendTimeoutMs: 1_000 }), key: key.key, workerId: 'i3a' });
  const b = await startNode({ config, target: createRefundTarget(world.client, { sendTimeoutMs: 1_000 }), key: key.key, workerId: 'i3b' });
  nodes.push(a, b);
  const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 10_000, maxUses: 5 });
  await a.approvals.grant(terms);
  const proposal = { requestId: `case-i3-${Date.now()}`, agent: 'support-bot', approval: terms.id, premises: {}, effect: { kind: 'refund', paymentIntent, amount: 10_000 } };
  const answer = await a.gate.submit(proposal);
  expect(answer.outcome).toBe('IN_FLIGHT');
  const effectId = answer.effectId;
  expect((await world.stripe.refunds.list({ payment_intent: paymentIntent })).data).toHaveLength(0);

  const hand = await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 10_000, metadata: { interlock_effect_id: effectId } });
  await new Promise((resolve) => setTimeout(resolve, 1_500));

  const { outcome } = await recoverUntilSettled(b, effectId, 10_000);
  const receipt = await b.journal.receipt(effectId);
  const committed = receipt?.entries.find((entry) => entry.kind === 'COMMITTED') as { found?: unknown } | undefined;
  console.log("COMMITTED entry:", JSON.stringify({ via: (committed as { via?: unknown })?.via, found: committed?.found, hand: hand.id }));
  expect({ outcome, evidence: committed?.found ?? null }).not.toMatchObject({ evidence: hand.id });
  expect(outcome).toMatch(/^REFUSED/);
});
