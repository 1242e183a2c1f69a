// Rule: an effect none of whose sends can have landed has no refund or credit of its own at Stripe
// (ReadContext.neverSent), at recovery as at the first send. When the journal says no request of the open dispatch ever
// left (its first send held back for lagging replicas, or its dispatch step's answer lost: take-over-1 answers
// neverSent) and the chain holds no earlier dispatch, recovery's re-check and resend read and send as a first dispatch
// does: a refund (or balance credit) labelled by hand with the effect id meanwhile is someone else's money, the premise
// is stale (REFUSED:stale_premise_at_recovery), and Stripe holds one refund (one credit), not two.
import { expect, it } from 'vitest';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import { createRefundTarget } from '../../src/stripe/refund-target.js';
import { approvalTerms, startNode } from '../support/harness.js';
import { pay, recoverUntilSettled } from '../stripe/stripe-support.js';
import { handLabelledRig } from './hand-labelled-rig.js';

const rig = handLabelledRig();

it('refuses at recovery a held-back first refund once a refund labelled by hand with its id was made, and sends no second refund', async () => {
  const { paymentIntent } = await pay(rig.world.stripe);
  const a = await startNode({ config: rig.heldBack(), target: createRefundTarget(rig.world.client, { sendTimeoutMs: 1_000 }), key: rig.key.key, workerId: 'nsa' });
  const b = await startNode({ config: rig.config, target: createRefundTarget(rig.world.client, { sendTimeoutMs: 1_000 }), key: rig.key.key, workerId: 'nsb' });
  rig.nodes.push(a, b);
  const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 10_000, maxUses: 5 });
  await a.approvals.grant(terms);
  const proposal = { requestId: `case-held-${Date.now()}`, agent: 'support-bot', approval: terms.id, premises: { refunded_by_others: 0, refundable: 10_000 }, effect: { kind: 'refund', paymentIntent, amount: 2_000 } };
  const answer = await a.gate.submit(proposal);
  expect(answer.outcome).toBe('IN_FLIGHT');
  const effectId = answer.effectId;
  expect((await rig.world.stripe.refunds.list({ payment_intent: paymentIntent })).data).toHaveLength(0);

  // The agent saw IN_FLIGHT, nothing sent; a person refunds by hand and labels it with the effect id from the answer.
  await rig.world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { interlock_effect_id: effectId } });

  const { outcome } = await recoverUntilSettled(b, effectId, 10_000);
  const refunded = (await rig.world.stripe.refunds.list({ payment_intent: paymentIntent })).data.filter((r) => r.status === 'succeeded' || r.status === 'pending').map((r) => r.amount);
  expect({ outcome, refunded }).toEqual({ outcome: 'REFUSED:stale_premise_at_recovery', refunded: [2_000] });
});

it('refuses at recovery a held-back first credit once a credit for the incident labelled by hand with its id was made, and credits the incident once', async () => {
  const customer = await rig.world.stripe.customers.create({ name: 'held back' });
  const incident = `INC-held-${Date.now()}`;
  const a = await startNode({ config: rig.heldBack(), target: createCreditTarget(rig.world.client, { sendTimeoutMs: 1_000 }), key: rig.key.key, workerId: 'nca' });
  const b = await startNode({ config: rig.config, target: createCreditTarget(rig.world.client, { sendTimeoutMs: 1_000 }), key: rig.key.key, workerId: 'ncb' });
  rig.nodes.push(a, b);
  const terms = approvalTerms({ scope: `customer:${customer.id}`, capCents: 10_000, maxUses: 5 });
  await a.approvals.grant(terms);
  const proposal = { requestId: `case-held-${Date.now()}`, agent: 'support-bot', approval: terms.id, premises: { incident_compensation: 0 }, effect: { kind: 'credit', customer: customer.id, amount: 1_000, incident } };
  const answer = await a.gate.submit(proposal);
  expect(answer.outcome).toBe('IN_FLIGHT');
  const effectId = answer.effectId;

  await rig.world.stripe.customers.createBalanceTransaction(customer.id, { amount: -1_000, currency: 'usd', metadata: { interlock_effect_id: effectId, interlock_incident: incident } });

  const { outcome } = await recoverUntilSettled(b, effectId, 10_000);
  const credited = (await rig.world.stripe.customers.listBalanceTransactions(customer.id)).data.filter((txn) => txn.amount < 0).map((txn) => txn.amount);
  expect({ outcome, credited }).toEqual({ outcome: 'REFUSED:stale_premise_at_recovery', credited: [-1_000] });
});
