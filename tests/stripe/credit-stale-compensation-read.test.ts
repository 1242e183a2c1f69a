// Rule (credit-target.ts readFacts, ReadContext.premiseCheck): the credit target's pre-send check ("incident already compensated", src/stripe/credit-target.ts apply) weighs
// what Stripe holds right before the send: the header says apply "checks the compensation the premise read for this
// effect found right before the dispatch ... or reads it itself when there is no such read". A read of the effect's
// facts made earlier for another purpose (the decision-time read, in the same process) must not stand in for it when
// the gate's own pre-dispatch read did not read the compensation (a proposal whose premises name the subscription
// only, or none). Otherwise a compensation billing made between the decision and the send is not seen, and the
// customer is compensated twice for one incident. Nor may a premise read made for an earlier attempt of the same
// request that the dispatch step refused (REFUSED:over_cap, nothing sent): it was not made right before this dispatch
// (ReadContext.attempt, SendContext.attempt).
import { expect, it } from 'vitest';
import { CREDIT_FACTS } from '../../src/stripe/credit-target.js';
import { approvalTerms } from '../support/harness.js';
import { gateOnStripe } from './stripe-support.js';

const { world, node } = gateOnStripe({ sendTimeoutMs: 2_000 }, { kind: 'credit' });

for (const premisesKind of ['subscription only', 'none'] as const) {
  it(`a compensation billing made after the decision-time read is seen by the pre-send check (premises: ${premisesKind})`, async () => {
    const customer = await world.stripe.customers.create({ name: 'twice' });
    const incident = `INC-stale-${premisesKind.length}`;
    const terms = approvalTerms({ scope: `customer:${customer.id}`, capCents: 1_000 });
    await node.approvals.grant(terms);
    const effect = { kind: 'credit' as const, customer: customer.id, amount: 1_000, incident };
    const proposal = { requestId: `case-stale-${premisesKind.length}`, agent: 'support-bot', approval: terms.id, premises: {} as Record<string, unknown>, effect };
    const effectId = node.gate.effectIdOf(proposal);
    // The decision reads the facts (nothing compensated yet)...
    const decided = await node.target.readFacts(effectId, effect, CREDIT_FACTS, { timeoutMs: 2_000 });
    expect(decided).toEqual({ subscription_status: null, incident_compensation: 0, currency: 'usd', customer_currency: 'usd' });
    // ...billing's SLA automation credits the incident a second later...
    await world.stripe.customers.createBalanceTransaction(customer.id, { amount: -700, currency: 'usd', metadata: { incident } });
    if (premisesKind === 'subscription only') proposal.premises = { subscription_status: decided.subscription_status };
    // ...and the gate sends.
    const answer = await node.gate.submit(proposal);
    const credits = (await world.stripe.customers.listBalanceTransactions(customer.id)).data.filter((txn) => txn.amount < 0);
    expect(credits, 'credits for the incident at Stripe').toHaveLength(1);
    expect(answer.outcome).toBe('REFUSED:target_error');
  });
}

it('a compensation billing made after a refused attempt\'s premise read is seen by the next attempt\'s pre-send check', async () => {
  const customer = await world.stripe.customers.create({ name: 'twice via refused attempt' });
  const incident = 'INC-refused-a';
  const subject = `customer:${customer.id}`;
  // Approval 1 already has 500 of its 1000 cents held by another credit (another incident): the next 1000 is over its cap.
  const first = approvalTerms({ scope: subject, capCents: 1_000, maxUses: 10 });
  await node.approvals.grant(first);
  const other = await node.gate.submit({ requestId: 'case-refused-other', agent: 'support-bot', approval: first.id, premises: {}, effect: { kind: 'credit', customer: customer.id, amount: 500, incident: 'INC-refused-other' } });
  expect(other.outcome).toBe('COMMITTED');

  const effect = { kind: 'credit' as const, customer: customer.id, amount: 1_000, incident };
  // Attempt 1: decided on incident_compensation 0; the gate reads the premises right before the dispatch step, which
  // refuses it over the approval's cap. Nothing is sent.
  const one = await node.gate.submit({ requestId: 'case-refused-a', agent: 'support-bot', approval: first.id, premises: { incident_compensation: 0 }, effect });
  expect(one.outcome).toBe('REFUSED:over_cap');

  // Billing's SLA automation credits the incident.
  await world.stripe.customers.createBalanceTransaction(customer.id, { amount: -700, currency: 'usd', metadata: { incident } });

  // A person grants a larger approval and the case is submitted again (same request, same payload), decided on the
  // subscription only (no incident_compensation premise, so the gate reads no compensation right before this dispatch).
  const second = approvalTerms({ scope: subject, capCents: 5_000, maxUses: 10 });
  await node.approvals.grant(second);
  const two = await node.gate.submit({ requestId: 'case-refused-a', agent: 'support-bot', approval: second.id, premises: {}, effect });

  const credits = (await world.stripe.customers.listBalanceTransactions(customer.id)).data.filter((txn) => txn.amount < 0 && (txn.metadata?.incident === incident || txn.metadata?.interlock_incident === incident));
  expect(credits.map((txn) => txn.amount), 'credits for the incident at Stripe').toEqual([-700]);
  expect(two.outcome).toBe('REFUSED:target_error');
});
