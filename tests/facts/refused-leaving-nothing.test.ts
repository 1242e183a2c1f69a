// Rule: only a send that could have reached Stripe can land late. An effect whose only send the target refused in a way
// that proves nothing of it landed (its first send, refused by the target's own check before any request left, or by
// Stripe's definite no, which the send's retries replay under its one key) made nothing at Stripe: the gate settles it
// REFUSED:target_error without a lookup and says so in the refusal's reason (refusalLeftNothing, src/core/outcomes.ts),
// and the facts agree (src/facts/apply.ts). A refund or balance credit a person makes by hand afterwards, labelled with
// the effect's id, is someone else's money: no LATE_RESULT, no late_landing alert, the receipt says nothing happened,
// and the approval is not charged again. Before, the facts recorded it as the effect's late landing (the receipt said
// COMMITTED_ON_QUERY and the approval held the amount again). A refusal that leaves a landing possible (a resend's,
// after a lost answer) still records one: late-landing.test.ts.
import { expect, it } from 'vitest';
import { createCreditTarget, createFacts, createFactsReader, createRefundTarget, type Target } from '../../src/interlock.js';
import { refusalLeftNothing } from '../../src/core/outcomes.js';
import { verify } from '../../src/core/verify.js';
import { approvalTerms, startNode, type TestNode } from '../support/harness.js';
import { pay } from '../stripe/stripe-support.js';
import { handLabelledRig } from '../gate/hand-labelled-rig.js';

const rig = handLabelledRig();

async function nodeOn(target: Target, name: string): Promise<TestNode> {
  const node = await startNode({ config: rig.config, target, key: rig.key.key, workerId: name });
  rig.nodes.push(node);
  return node;
}

/** The effect's refusal, submitted on `node`: it must say nothing of the effect can be at Stripe. */
async function refused(node: TestNode, proposal: Parameters<TestNode['gate']['submit']>[0]): Promise<string> {
  const answer = await node.gate.submit(proposal);
  expect(answer.outcome).toBe('REFUSED:target_error');
  const reason = 'reason' in answer && typeof answer.reason === 'string' ? answer.reason : '';
  expect(refusalLeftNothing(reason), reason).toBe(true);
  return answer.effectId;
}

/** What the facts made of the effect, once its subject's facts were read at Stripe (and `event`, when given, applied). */
async function afterFacts(node: TestNode, effectId: string, approval: string, subject: string, event?: { type: string; object: string }) {
  const facts = createFacts(node.stores, createFactsReader(rig.world.client));
  if (event !== undefined) {
    const found = (await rig.world.stripe.events.list({ type: event.type, limit: 100 })).data.find((one) => (one.data.object as { id?: unknown }).id === event.object);
    if (found === undefined) throw new Error(`Stripe has no ${event.type} for ${event.object}`);
    await facts.applyEvent(JSON.parse(JSON.stringify(found)) as Parameters<typeof facts.applyEvent>[0]);
  }
  await facts.reread(effectId);
  const receipt = await node.journal.receipt(effectId);
  const verification = verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: rig.key.publicKeys });
  return {
    valid: verification.valid,
    happened: verification.happened,
    lateLanding: verification.lateLanding,
    lateResults: (receipt?.entries ?? []).filter((entry) => entry.kind === 'LATE_RESULT').length,
    alerts: (await node.stores.alerts.list()).filter((alert) => alert.effectId === effectId).map((alert) => alert.kind),
    reservedCents: (await node.approvals.describe(approval)).snapshot?.reservedCents,
    movedCents: (await node.approvals.subjectCap(subject)).movedCents,
  };
}

const NOTHING = { valid: true, happened: false, lateLanding: null, lateResults: 0, alerts: [], reservedCents: 0, movedCents: 0 };

it("a refund the target's own check refused before sending: a refund made by hand with its id is not its late landing", async () => {
  const node = await nodeOn(createRefundTarget(rig.world.client, { sendTimeoutMs: 1_000 }), 'rln-before');
  const { paymentIntent } = await pay(rig.world.stripe);
  // $90 refunded by hand first: $10 is left refundable, and the check before the send refuses the $20.
  const other = await rig.world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 9_000 });
  const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 2_000 });
  await node.approvals.grant(terms);
  const effectId = await refused(node, { requestId: `case-rln-before-${paymentIntent}`, agent: 'support-bot', approval: terms.id, premises: {}, effect: { kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer' } });

  // The $90 fails at the bank; support then refunds the $20 by hand, labelled with the effect's id.
  await rig.world.sandbox.control.request('POST', `/refunds/${other.id}/fail`, { failure_reason: 'expired_or_canceled_card' });
  const hand = await rig.world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { interlock_effect_id: effectId } });
  expect(await afterFacts(node, effectId, terms.id, `payment:${paymentIntent}`, { type: 'refund.created', object: hand.id })).toEqual(NOTHING);
});

it('a refund whose only send Stripe refused (402): a refund made by hand with its id is not its late landing', async () => {
  const node = await nodeOn(createRefundTarget(rig.world.client, { sendTimeoutMs: 1_000 }), 'rln-stripe');
  const { paymentIntent } = await pay(rig.world.stripe);
  const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 2_000 });
  await node.approvals.grant(terms);
  await rig.world.sandbox.control.failNext({ path: '/v1/refunds', method: 'POST', status: 402, code: 'card_declined', message: 'Your card was declined.' });
  const effectId = await refused(node, { requestId: `case-rln-stripe-${paymentIntent}`, agent: 'support-bot', approval: terms.id, premises: {}, effect: { kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer' } });

  const hand = await rig.world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { interlock_effect_id: effectId } });
  expect(await afterFacts(node, effectId, terms.id, `payment:${paymentIntent}`, { type: 'refund.created', object: hand.id })).toEqual(NOTHING);
});

it('a credit whose only send Stripe refused (400): a balance credit made by hand with its id is not its late landing', async () => {
  const node = await nodeOn(createCreditTarget(rig.world.client, { sendTimeoutMs: 1_000 }), 'rln-credit');
  const customer = (await rig.world.stripe.customers.create({ name: 'Subscriber' })).id;
  const terms = approvalTerms({ scope: `customer:${customer}`, capCents: 1_000 });
  await node.approvals.grant(terms);
  await rig.world.sandbox.control.failNext({ path: `/v1/customers/${customer}/balance_transactions`, method: 'POST', status: 400, code: 'parameter_invalid_integer', message: 'Invalid integer.' });
  const effectId = await refused(node, { requestId: `case-rln-credit-${customer}`, agent: 'support-bot', approval: terms.id, premises: { subscription_status: null, incident_compensation: 0 }, effect: { kind: 'credit', customer, amount: 1_000, incident: 'INC-rln' } });

  await rig.world.stripe.customers.createBalanceTransaction(customer, { amount: -1_000, currency: 'usd', metadata: { interlock_effect_id: effectId, interlock_incident: 'INC-rln' } });
  expect(await afterFacts(node, effectId, terms.id, `customer:${customer}`)).toEqual(NOTHING);
});
