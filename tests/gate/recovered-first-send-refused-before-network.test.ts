// Rule: an effect none of whose requests ever left (take-over's neverSent on a chain with one DISPATCHED, or a first
// send) has nothing of its own at Stripe: when its send is refused by the target's own checks before anything leaves,
// the refusal stands, and no lookup takes a refund labelled by hand with the effect's id for the effect's landing.
// Setup as tests/gate/recovered-first-send-labelled.test.ts: worker a's first send is held back (nothing leaves); a
// person refunds the whole payment by hand and labels it with the effect id from the IN_FLIGHT answer. The proposal
// decided on no refund premise (premises {}), so the neverSent re-check passes; the resend's remainder check (read with
// neverSent: the hand refund is someone else's) finds 0 refundable and refuses before anything is sent. It ends
// refused (nothing of it moved); before the fix: COMMITTED_ON_QUERY with the hand-made refund as its evidence
// (the approval charged for money the agent never moved; the receipt says the effect's refund returned the money).
import { expect, it } from 'vitest';
import { createRefundTarget } from '../../src/stripe/refund-target.js';
import { approvalTerms, startNode } from '../support/harness.js';
import { pay, recoverUntilSettled } from '../stripe/stripe-support.js';
import { handLabelledRig } from './hand-labelled-rig.js';

const rig = handLabelledRig();

it('a neverSent recovery whose resend is refused does not commit a refund labelled by hand as the effect\'s landing', async () => {
  const { paymentIntent } = await pay(rig.world.stripe);
  const a = await startNode({ config: rig.heldBack(), target: createRefundTarget(rig.world.client, { sendTimeoutMs: 1_000 }), key: rig.key.key, workerId: 'i3a' });
  const b = await startNode({ config: rig.config, target: createRefundTarget(rig.world.client, { sendTimeoutMs: 1_000 }), key: rig.key.key, workerId: 'i3b' });
  rig.nodes.push(a, b);
  const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 10_000, maxUses: 5 });
  await a.approvals.grant(terms);
  const proposal = { requestId: `case-i3-${Date.now()}`, agent: 'support-bot', approval: terms.id, premises: {}, effect: { kind: 'refund', paymentIntent, amount: 10_000 } };
  const answer = await a.gate.submit(proposal);
  expect(answer.outcome).toBe('IN_FLIGHT');
  const effectId = answer.effectId;
  expect((await rig.world.stripe.refunds.list({ payment_intent: paymentIntent })).data).toHaveLength(0);

  const hand = await rig.world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 10_000, metadata: { interlock_effect_id: effectId } });
  await new Promise((resolve) => setTimeout(resolve, 1_500));

  const { outcome } = await recoverUntilSettled(b, effectId, 10_000);
  const receipt = await b.journal.receipt(effectId);
  const committed = receipt?.entries.find((entry) => entry.kind === 'COMMITTED') as { found?: unknown } | undefined;
  console.log("COMMITTED entry:", JSON.stringify({ via: (committed as { via?: unknown })?.via, found: committed?.found, hand: hand.id }));
  expect({ outcome, evidence: committed?.found ?? null }).not.toMatchObject({ evidence: hand.id });
  expect(outcome).toMatch(/^REFUSED/);
});
