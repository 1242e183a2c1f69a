// Rule: an effect none of whose requests ever left before this one (neverSent) has nothing of its own at Stripe but
// what this request made; when Stripe itself definitely refuses that request (a 400), nothing of the effect moved,
// so the effect ends refused, and no lookup takes a refund labelled by hand with the effect's id for its landing
// (a first fix covered only a refusal made before the network).
// Setup as tests/gate/recovered-first-send-refused-before-network.test.ts: worker a's first send is held back; a
// person refunds $30 of the $100 payment by hand, labelled with the effect id from the IN_FLIGHT answer; then the
// charge is charged back. The $30 refund still fits the remainder (read with neverSent: $70 refundable), so the resend
// leaves and Stripe answers 400 charge_disputed. It ends REFUSED (before the fix: COMMITTED_ON_QUERY with the hand-made
// refund as the effect's evidence (approval charged $30 the agent never moved; the receipt says its refund landed)).
import { expect, it } from 'vitest';
import { createRefundTarget } from '../../src/stripe/refund-target.js';
import { approvalTerms, startNode } from '../support/harness.js';
import { callsSince, mark, pay, recoverUntilSettled } from '../stripe/stripe-support.js';
import { handLabelledRig } from './hand-labelled-rig.js';

const rig = handLabelledRig();

it("a neverSent recovery whose resend Stripe refuses (400) does not commit a refund labelled by hand as the effect's landing", async () => {
  const { paymentIntent, charge } = await pay(rig.world.stripe);
  const a = await startNode({ config: rig.heldBack(), target: createRefundTarget(rig.world.client, { sendTimeoutMs: 1_000 }), key: rig.key.key, workerId: 'g4a' });
  const b = await startNode({ config: rig.config, target: createRefundTarget(rig.world.client, { sendTimeoutMs: 1_000 }), key: rig.key.key, workerId: 'g4b' });
  rig.nodes.push(a, b);
  const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 10_000, maxUses: 5 });
  await a.approvals.grant(terms);
  const proposal = { requestId: `case-g4-${Date.now()}`, agent: 'support-bot', approval: terms.id, premises: {}, effect: { kind: 'refund', paymentIntent, amount: 3_000 } };
  const answer = await a.gate.submit(proposal);
  expect(answer.outcome).toBe('IN_FLIGHT');
  const effectId = answer.effectId;
  expect((await rig.world.stripe.refunds.list({ payment_intent: paymentIntent })).data).toHaveLength(0);

  const hand = await rig.world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 3_000, metadata: { interlock_effect_id: effectId } });
  await rig.world.sandbox.control.openDispute({ charge, kind: 'chargeback' } as never);
  await new Promise((resolve) => setTimeout(resolve, 1_500));

  const since = await mark(rig.world.sandbox);
  const { outcome } = await recoverUntilSettled(b, effectId, 10_000);
  // The resend left and Stripe refused it (400 charge_disputed): one POST /v1/refunds from recovery.
  expect((await callsSince(rig.world.sandbox, since)).filter((call) => call.startsWith('POST /v1/refunds'))).toHaveLength(1);
  const receipt = await b.journal.receipt(effectId);
  const committed = receipt?.entries.find((entry) => entry.kind === 'COMMITTED') as { found?: unknown } | undefined;
  // Only the hand refund exists at Stripe: the effect moved nothing.
  expect((await rig.world.stripe.refunds.list({ payment_intent: paymentIntent })).data.map((refund) => refund.id)).toEqual([hand.id]);
  expect({ outcome, evidence: committed?.found ?? null }).toEqual({ outcome: expect.stringMatching(/^REFUSED/), evidence: null });
});
