// Rule: P progress / REFUSED:target_error — a credit whose only send was definitely refused (nothing ever left for
// Stripe: the customer was deleted before the dispatch) is REFUSED:target_error with its cents given back; lookup_blind
// must only turn into AMBIGUOUS where an earlier send of the effect could have landed before the deletion.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import { approvalTerms, kill, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { startStripeWorld, type StripeWorld } from './stripe-support.js';

const TIMING: Partial<Config> = { sendTimeoutMs: 1_000, settleMarginMs: 200, claimTtlMs: 2_500, heartbeatMs: 100, heartbeatTtlMs: 500 };
let world: StripeWorld;
let config: Config;
const nodes: TestNode[] = [];

beforeAll(async () => {
  world = await startStripeWorld();
  config = testConfig({ ...TIMING, keyPrefix: `t-diff-${Math.random().toString(36).slice(2, 10)}` });
});
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.close().catch(() => undefined)));
  await world.close();
  const redis = new Redis(config.redisUrl);
  for (const pattern of [`${config.keyPrefix}:*`, `{${config.keyPrefix}-queues}:*`]) {
    const stale = await redis.keys(pattern);
    if (stale.length > 0) await redis.del(...stale);
  }
  await redis.quit();
});

it('a credit to a customer deleted before the decision, refused on its first and only send, is REFUSED:target_error, not AMBIGUOUS', async () => {
  const node = await startNode({ config, target: createCreditTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs }), key: testKey().key, workerId: 'blind-1' });
  nodes.push(node);
  const customer = await world.stripe.customers.create({ name: 'deleted before the case' });
  await world.stripe.customers.del(customer.id);
  const terms = approvalTerms({ id: 'ap_blind_first', scope: `customer:${customer.id}`, capCents: 1_000, maxUses: 1 });
  await node.approvals.grant(terms);
  // The facts as a decider reads them now: a deleted customer reads as every fact null.
  const facts = await createCreditTarget(world.client).readFacts('x'.repeat(64), { kind: 'credit', customer: customer.id, amount: 1_000, incident: 'INC-b' }, ['subscription_status', 'incident_compensation'], { timeoutMs: 2_000 });
  expect(facts).toEqual({ subscription_status: null, incident_compensation: null });
  const proposal = { requestId: 'case-blind-first', agent: 'support-bot', approval: terms.id, premises: facts, effect: { kind: 'credit', customer: customer.id, amount: 1_000, incident: 'INC-b' } };
  const result = await node.gate.submit(proposal);
  const landed = await world.sandbox.control.requests();
  // Nothing was ever posted: apply's pre-send read found the customer gone and refused.
  expect(landed.filter((r) => r.method === 'POST' && r.path.includes('balance_transactions'))).toHaveLength(0);
  expect(result.outcome).toBe('REFUSED:target_error');
  expect((await node.approvals.describe(terms.id)).snapshot?.reservedCents ?? 0).toBe(0);
});

it('a credit held back before anything left (replicas did not acknowledge), whose customer is deleted before recovery, is REFUSED:stale_premise_at_recovery, not AMBIGUOUS', async () => {
  // Node a asks for one replica's acknowledgement, which this Redis (no replicas) never gives: it dispatches and holds
  // the send back, nothing leaves ("sent once this holds, never settled AMBIGUOUS", send.ts holdBack).
  const key = testKey().key;
  const a = await startNode({ config: { ...config, redisMinReplicas: 1, redisWaitMs: 50 }, target: createCreditTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs }), key, workerId: 'blind-a' });
  const b = await startNode({ config, target: createCreditTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs }), key, workerId: 'blind-b' });
  nodes.push(a, b);
  const customer = await world.stripe.customers.create({ name: 'deleted while held back' });
  const partition = `customer:${customer.id}`;
  const terms = approvalTerms({ id: 'ap_blind_held', scope: partition, capCents: 1_000, maxUses: 1 });
  await a.approvals.grant(terms);
  const proposal = { requestId: 'case-blind-held', agent: 'support-bot', approval: terms.id, premises: { subscription_status: null, incident_compensation: 0 }, effect: { kind: 'credit', customer: customer.id, amount: 1_000, incident: 'INC-h' } };
  const effectId = a.gate.effectIdOf(proposal);
  const first = await a.gate.submit(proposal).then((r) => r.outcome, (e: unknown) => `threw ${(e as Error).message.slice(0, 80)}`);
  expect((await b.journal.readState(partition, effectId)).state.open, `dispatch open after ${first}`).toBe(true);
  expect((await world.stripe.customers.listBalanceTransactions(customer.id)).data, 'nothing left for Stripe').toHaveLength(0);
  await kill(a);
  await world.stripe.customers.del(customer.id);

  let outcome: string | undefined;
  for (let i = 0; i < 40 && outcome === undefined; i += 1) {
    const pass = await b.gate.recover({ only: [effectId] });
    outcome = pass.settled.find((item) => item.effectId === effectId)?.outcome;
    if (outcome === undefined) await new Promise((r) => setTimeout(r, 250));
  }
  expect(outcome).toBe('REFUSED:stale_premise_at_recovery');
  expect((await b.approvals.describe(terms.id)).snapshot?.reservedCents ?? 0).toBe(0);
});
