// Rule: what landed is recorded, and what cannot be told is said (DESIGN §4): a credit that reached Stripe is never
// settled REFUSED (happened: false, its cap released) because its customer was deleted before recovery looked it up.
// Stripe no longer lists a deleted customer's balance transactions, so the lookup can never tell again (lookup_blind):
// the effect is settled AMBIGUOUS with its cents held, for a person to check. Only a customer Stripe never knew
// answers "nothing landed". And only where an earlier request of the dispatch could have landed: a credit whose only
// send was refused, or none of whose requests left (held back), is refused as before, its cents given back.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { InterlockError } from '../../src/core/errors.js';
import { ProcessCrash, type Target } from '../../src/core/target.js';
import { currentOutcome } from '../../src/core/verify.js';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import { approvalTerms, kill, removePrefixes, sleep, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { effectIdFor, startStripeWorld, type StripeWorld } from './stripe-support.js';

const TIMING: Partial<Config> = { sendTimeoutMs: 1_000, settleMarginMs: 200, claimTtlMs: 2_500, heartbeatMs: 100, heartbeatTtlMs: 500 };
const READ = { timeoutMs: 2_000 };

let world: StripeWorld;
let config: Config;
let key: ReturnType<typeof testKey>;
const nodes: TestNode[] = [];

beforeAll(async () => {
  world = await startStripeWorld();
  config = testConfig({ ...TIMING, keyPrefix: `t-credit-deleted-${Math.random().toString(36).slice(2, 10)}` });
  key = testKey();
});
afterAll(async () => {
  await Promise.all(nodes.map((node) => node.close().catch(() => undefined)));
  await world.close();
  await removePrefixes([config.keyPrefix, `{${config.keyPrefix}-queues}`]);
});

async function node(workerId: string, target: Target): Promise<TestNode> {
  const started = await startNode({ config, target, key: key.key, workerId });
  nodes.push(started);
  return started;
}

it('a credit that landed, whose sender died before recording it, is not settled REFUSED after the customer is deleted', async () => {
  const credits = createCreditTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs });
  // Worker a sends the credit (it lands at Stripe) and dies before the gate records the answer.
  const dying: Target = {
    ...credits,
    async apply(effectId, effect, context) {
      await credits.apply(effectId, effect, context);
      throw new ProcessCrash('after the credit landed');
    },
  };
  const a = await node('del-a', dying);
  const b = await node('del-b', createCreditTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs }));
  const customer = await world.stripe.customers.create({ name: 'to be deleted' });
  const partition = `customer:${customer.id}`;
  const terms = approvalTerms({ id: 'ap_deleted_customer', scope: partition, capCents: 1_000, maxUses: 1 });
  await a.approvals.grant(terms);
  const proposal = { requestId: 'case-deleted-customer', agent: 'support-bot', approval: terms.id, premises: { subscription_status: null, incident_compensation: 0 }, effect: { kind: 'credit', customer: customer.id, amount: 1_000, incident: 'INC-del' } };
  const effectId = a.gate.effectIdOf(proposal);
  await expect(a.gate.submit(proposal)).rejects.toBeInstanceOf(ProcessCrash);
  const landed = (await world.stripe.customers.listBalanceTransactions(customer.id)).data.filter((t) => t.metadata?.interlock_effect_id === effectId);
  expect(landed, 'the credit landed at Stripe').toHaveLength(1);
  await kill(a);

  await world.stripe.customers.del(customer.id);

  // The next pass settles it AMBIGUOUS: neither a refusal (the credit is at Stripe) nor a wait for a lookup that can
  // never answer.
  const pass = await b.gate.recover({ only: [effectId] });
  expect(pass.settled.find((item) => item.effectId === effectId)?.outcome).toBe('AMBIGUOUS');
  expect(currentOutcome(await b.journal.entries(partition, effectId))).toBe('AMBIGUOUS');
  const ambiguous = (await b.journal.entries(partition, effectId)).find((entry) => entry.kind === 'AMBIGUOUS');
  expect(ambiguous && 'reason' in ambiguous ? ambiguous.reason : '').toMatch(/was deleted at Stripe/);
  // The approval keeps the cents that may have moved (they did).
  expect((await b.approvals.describe(terms.id)).snapshot?.reservedCents ?? 0, 'cents the approval still holds for the credit that landed').toBe(1_000);
  // Later passes leave it so.
  await sleep(TIMING.settleMarginMs ?? 0);
  await b.gate.recover({ only: [effectId] });
  expect(currentOutcome(await b.journal.entries(partition, effectId))).toBe('AMBIGUOUS');
});

it('the lookup cannot tell for a deleted customer, and finds nothing for a customer Stripe never knew', async () => {
  const credits = createCreditTarget(world.client);
  const customer = await world.stripe.customers.create({ name: 'deleted before the lookup' });
  await world.stripe.customers.del(customer.id);
  const effect = { kind: 'credit' as const, customer: customer.id, amount: 500, incident: 'INC-gone' };

  const lookup = credits.query(effectIdFor('deleted'), effect, READ);
  await expect(lookup).rejects.toBeInstanceOf(InterlockError);
  await expect(lookup).rejects.toMatchObject({ code: 'lookup_blind' });
  expect(await credits.query(effectIdFor('never known'), { ...effect, customer: 'cus_neverExisted' }, READ)).toBeNull();
});

it('a credit to a customer deleted before the decision, refused on its first and only send, is REFUSED:target_error, not AMBIGUOUS', async () => {
  const node = await startNode({ config, target: createCreditTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs }), key: key.key, workerId: 'blind-1' });
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
  expect(landed.filter((r) => r.method === 'POST' && r.path.includes(`/customers/${customer.id}/balance_transactions`))).toHaveLength(0);
  expect(result.outcome).toBe('REFUSED:target_error');
  expect((await node.approvals.describe(terms.id)).snapshot?.reservedCents ?? 0).toBe(0);
});

it('a credit held back before anything left (replicas did not acknowledge), whose customer is deleted before recovery, is REFUSED:stale_premise_at_recovery, not AMBIGUOUS', async () => {
  // Node a asks for one replica's acknowledgement, which this Redis (no replicas) never gives: it dispatches and holds
  // the send back, nothing leaves ("sent once this holds, never settled AMBIGUOUS", send.ts holdBack).
  const a = await startNode({ config: { ...config, redisMinReplicas: 1, redisWaitMs: 50 }, target: createCreditTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs }), key: key.key, workerId: 'blind-a' });
  const b = await startNode({ config, target: createCreditTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs }), key: key.key, workerId: 'blind-b' });
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
