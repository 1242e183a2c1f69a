// Rule (src/stripe/credit-target.ts header, apply): the pre-send "incident already compensated" check weighs the
// compensation the gate's premise read found "right before the dispatch", and "a read made for anything else ... is
// never used". A premise read made for an earlier submit of the same request that the dispatch step refused
// (REFUSED:over_cap, nothing sent) is not a read made right before this dispatch: when the next submit's premises do
// not name incident_compensation (subscription only, or none: the gate reads nothing), apply must read Stripe itself.
// Otherwise a compensation billing made in between is not seen and the customer is compensated twice.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import { approvalTerms, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { startStripeWorld, type StripeWorld } from './stripe-support.js';

let world: StripeWorld;
let config: Config;
let node: TestNode;
beforeAll(async () => {
  world = await startStripeWorld();
  config = testConfig({ keyPrefix: `rv-credits-${Math.random().toString(16).slice(2, 10)}`, sendTimeoutMs: 2_000 });
  node = await startNode({ config, target: createCreditTarget(world.client, { sendTimeoutMs: 2_000 }), key: testKey().key });
});
afterAll(async () => {
  await node.close();
  await world.close();
  const redis = new Redis(config.redisUrl);
  const stale = await redis.keys(`${config.keyPrefix}:*`);
  if (stale.length > 0) await redis.del(...stale);
  await redis.quit();
});

it('a compensation billing made after a refused attempt\'s premise read is seen by the next attempt\'s pre-send check', async () => {
  const customer = await world.stripe.customers.create({ name: 'twice via refused attempt' });
  const incident = 'INC-rv-a';
  const subject = `customer:${customer.id}`;
  // Approval 1 already has 500 of its 1000 cents held by another credit (another incident): the next 1000 is over its cap.
  const first = approvalTerms({ scope: subject, capCents: 1_000, maxUses: 10 });
  await node.approvals.grant(first);
  const other = await node.gate.submit({ requestId: 'case-other', agent: 'support-bot', approval: first.id, premises: {}, effect: { kind: 'credit', customer: customer.id, amount: 500, incident: 'INC-rv-other' } });
  expect(other.outcome).toBe('COMMITTED');

  const effect = { kind: 'credit' as const, customer: customer.id, amount: 1_000, incident };
  // Attempt 1: decided on incident_compensation 0; the gate reads the premises right before the dispatch step, which
  // refuses it over the approval's cap. Nothing is sent.
  const one = await node.gate.submit({ requestId: 'case-a', agent: 'support-bot', approval: first.id, premises: { incident_compensation: 0 }, effect });
  expect(one.outcome).toBe('REFUSED:over_cap');

  // Billing's SLA automation credits the incident.
  await world.stripe.customers.createBalanceTransaction(customer.id, { amount: -700, currency: 'usd', metadata: { incident } });

  // A person grants a larger approval and the case is submitted again (same request, same payload), decided on the
  // subscription only (no incident_compensation premise, so the gate reads no compensation right before this dispatch).
  const second = approvalTerms({ scope: subject, capCents: 5_000, maxUses: 10 });
  await node.approvals.grant(second);
  const two = await node.gate.submit({ requestId: 'case-a', agent: 'support-bot', approval: second.id, premises: {}, effect });

  const credits = (await world.stripe.customers.listBalanceTransactions(customer.id)).data.filter((txn) => txn.amount < 0 && (txn.metadata?.incident === incident || txn.metadata?.interlock_incident === incident));
  expect(credits.map((txn) => txn.amount), 'credits for the incident at Stripe').toEqual([-700]);
  expect(two.outcome).toBe('REFUSED:target_error');
});
