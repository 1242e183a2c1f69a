// Rule: a first dispatch (neverSent: its chain holds no DISPATCHED) has nothing of its own at Stripe but what its one
// send made; when Stripe definitely refuses that send (a 400), nothing of the effect moved, so the effect ends refused,
// and no lookup takes a refund labelled by hand with the effect's id for its landing (f96d84a skips that lookup only
// for a refusal before the network, `left` false; 4e98485 counts such a refund as someone else's in the facts).
// Setup: $100 payment; a person refunds $30 by hand, labelled with the effect id (gate.effectIdOf of the proposal, as
// in tests/stripe/labelled-before-first-send.test.ts); the charge is charged back; the agent submits a $30 refund
// decided on no refund premise. The pre-send check passes ($70 refundable), the POST leaves, Stripe answers 400
// charge_disputed. It ends REFUSED:target_error (before the fix: COMMITTED_ON_QUERY with the hand refund as evidence).
import { expect, it } from 'vitest';
import { createRefundTarget } from '../../src/stripe/refund-target.js';
import { approvalTerms, startNode } from '../support/harness.js';
import { callsSince, mark, pay } from '../stripe/stripe-support.js';
import { handLabelledRig } from './hand-labelled-rig.js';

const rig = handLabelledRig();

it("a first send Stripe refuses (400) is not committed on a refund labelled by hand with the effect's id", async () => {
  const { paymentIntent, charge } = await pay(rig.world.stripe);
  const a = await startNode({ config: rig.config, target: createRefundTarget(rig.world.client, { sendTimeoutMs: 1_000 }), key: rig.key.key, workerId: 'g4f' });
  rig.nodes.push(a);
  const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 10_000, maxUses: 5 });
  await a.approvals.grant(terms);
  const proposal = { requestId: `case-g4f-${Date.now()}`, agent: 'support-bot', approval: terms.id, premises: {}, effect: { kind: 'refund', paymentIntent, amount: 3_000 } };
  const effectId = a.gate.effectIdOf(proposal);
  const hand = await rig.world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 3_000, metadata: { interlock_effect_id: effectId } });
  await rig.world.sandbox.control.openDispute({ charge, kind: 'chargeback' } as never);

  const since = await mark(rig.world.sandbox);
  const answer = await a.gate.submit(proposal);
  expect((await callsSince(rig.world.sandbox, since)).filter((call) => call.startsWith('POST /v1/refunds'))).toHaveLength(1);
  expect((await rig.world.stripe.refunds.list({ payment_intent: paymentIntent })).data.map((refund) => refund.id)).toEqual([hand.id]);
  const receipt = await a.journal.receipt(effectId);
  const committed = receipt?.entries.find((entry) => entry.kind === 'COMMITTED') as { found?: unknown } | undefined;
  expect({ outcome: answer.outcome, evidence: committed?.found ?? null }).toEqual({ outcome: expect.stringMatching(/^REFUSED/), evidence: null });
});
