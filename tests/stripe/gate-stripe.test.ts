// The real gate, on real Redis, with the Stripe targets against the sandbox (issue 9 §2, §6, §7): a refund
// committed at two Stripe calls, a sender that died right before the send resent by recovery under the same key
// (one refund at Stripe), an inquiry escalated to a chargeback during the outage refused at recovery (no refund),
// and a goodwill credit committed with its calls counted. Every receipt verifies offline.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { ProcessCrash, type Target } from '../../src/core/target.js';
import { verify } from '../../src/core/verify.js';
import { createCreditTarget, CREDIT_FACTS } from '../../src/stripe/credit-target.js';
import { createRefundTarget, REFUND_FACTS } from '../../src/stripe/refund-target.js';
import { stripeSide } from '../../src/interlock.js';
import { approvalTerms, kill, sleep, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { Redis } from 'ioredis';
import { callsSince, mark, pay, startStripeWorld, TEST_KEY, type StripeWorld } from './stripe-support.js';

/** Short timings, valid for the gate: claim TTL above the send timeout, dedup margin above send timeout + settle margin. */
const TIMING: Partial<Config> = { sendTimeoutMs: 1_000, settleMarginMs: 150, claimTtlMs: 2_500, heartbeatMs: 100, heartbeatTtlMs: 500 };

let world: StripeWorld;
let config: Config;
let key: ReturnType<typeof testKey>;
let nodes: TestNode[] = [];
let crashBeforeSend = false;
let target: Target;

beforeAll(async () => {
  world = await startStripeWorld();
  config = testConfig(TIMING);
  key = testKey();
  const refunds = createRefundTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs });
  // A worker that dies right before its request leaves: the gate writes nothing more, as after a SIGKILL.
  target = {
    ...refunds,
    async apply(effectId, effect, context) {
      if (crashBeforeSend) {
        crashBeforeSend = false;
        throw new ProcessCrash('before the send');
      }
      return refunds.apply(effectId, effect, context);
    },
  };
});
afterEach(async () => {
  await Promise.all(nodes.map((node) => node.close().catch(() => undefined)));
  nodes = [];
});
afterAll(async () => {
  await world.close();
  const redis = new Redis(config.redisUrl);
  const stale = await redis.keys(`${config.keyPrefix}:*`);
  if (stale.length > 0) await redis.del(...stale);
  await redis.quit();
});

async function node(workerId: string, on: Target = target): Promise<TestNode> {
  const started = await startNode({ config, target: on, key: key.key, workerId });
  nodes.push(started);
  return started;
}

/** A $20 refund proposal for the payment, with its premises read through the target as the decision saw them. */
async function proposal(at: TestNode, paymentIntent: string) {
  const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 2_000 });
  await at.approvals.grant(terms);
  const draft = { requestId: `case-${paymentIntent}`, agent: 'support-bot', approval: terms.id, premises: {}, effect: { kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer' } };
  const effectId = at.gate.effectIdOf(draft);
  const premises = await target.readFacts(effectId, { kind: 'refund', paymentIntent, amount: 2_000 }, REFUND_FACTS, { timeoutMs: 2_000 });
  return { effectId, proposal: { ...draft, premises } };
}

async function recoverUntilSettled(at: TestNode, effectId: string) {
  for (let pass = 0; pass < 6; pass += 1) {
    const report = await at.gate.recover({ only: [effectId] });
    const settled = report.settled.find((item) => item.effectId === effectId);
    if (settled !== undefined) return settled;
    if (report.nextAt !== null) {
      for (let now = await at.journal.serverTime(); now < report.nextAt; now = await at.journal.serverTime()) await sleep(report.nextAt - now + 5);
    } else {
      await sleep(50);
    }
  }
  throw new Error(`effect ${effectId} did not settle`);
}

async function verifiedReceipt(at: TestNode, effectId: string) {
  const receipt = await at.gate.receipt(effectId);
  const verification = verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: key.publicKeys });
  expect(verification.problems).toEqual([]);
  expect(verification).toMatchObject({ valid: true, chainIntact: true, signed: true });
  return verification;
}

const refundsOf = async (paymentIntent: string) => (await world.stripe.refunds.list({ payment_intent: paymentIntent })).data;

describe('the gate with the Stripe refund target', () => {
  it('commits a refund at two Stripe calls (the premise re-read and the create), tagged with its effect id', async () => {
    const a = await node('a');
    const { paymentIntent } = await pay(world.stripe);
    const { effectId, proposal: proposed } = await proposal(a, paymentIntent);
    const since = await mark(world.sandbox);
    const answer = await a.gate.submit(proposed);
    expect(answer).toMatchObject({ effectId, outcome: 'COMMITTED' });
    expect(await callsSince(world.sandbox, since)).toEqual([`GET /v1/payment_intents/${paymentIntent}`, 'POST /v1/refunds']);
    const [landed, ...others] = await refundsOf(paymentIntent);
    expect(others).toEqual([]);
    expect(landed).toMatchObject({ amount: 2_000, status: 'succeeded', metadata: { interlock_effect_id: effectId, interlock_request: `case-${paymentIntent}` } });
    expect(await verifiedReceipt(a, effectId)).toMatchObject({ outcome: 'COMMITTED', happened: true, happenedOnce: true, assumptionsHeld: true, evidence: landed?.id });
  });

  it('COMMITTED_BY_RETRY: a worker that died right before the send is resent by recovery under the same key, and one refund lands', async () => {
    const [a, b] = [await node('a'), await node('b')];
    const { paymentIntent } = await pay(world.stripe);
    const { effectId, proposal: proposed } = await proposal(a, paymentIntent);
    crashBeforeSend = true;
    await expect(a.gate.submit(proposed)).rejects.toBeInstanceOf(ProcessCrash);
    expect(await refundsOf(paymentIntent)).toEqual([]);
    await kill(a);
    const since = await mark(world.sandbox);
    const report = await b.gate.recover({ only: [effectId] });
    expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_BY_RETRY' })]);
    // The re-read before the resend is one call too.
    expect(await callsSince(world.sandbox, since)).toEqual([`GET /v1/payment_intents/${paymentIntent}`, 'POST /v1/refunds']);
    const landed = await refundsOf(paymentIntent);
    expect(landed).toHaveLength(1);
    // Recovery names the request as the first send would have (read from the PROPOSED), so the parameters match.
    expect(landed[0]).toMatchObject({ amount: 2_000, metadata: { interlock_effect_id: effectId, interlock_request: `case-${paymentIntent}` } });
    expect(await verifiedReceipt(b, effectId)).toMatchObject({ outcome: 'COMMITTED_BY_RETRY', happened: true, happenedOnce: true });
  });

  it('REFUSED:stale_premise_at_recovery: an inquiry escalated to a chargeback during the outage stops the resend, and no refund lands', async () => {
    const [a, b] = [await node('a'), await node('b')];
    const { paymentIntent } = await pay(world.stripe, 'pm_card_createDisputeInquiry');
    const { effectId, proposal: proposed } = await proposal(a, paymentIntent);
    expect(proposed.premises).toMatchObject({ chargebacks: [] });
    crashBeforeSend = true;
    await expect(a.gate.submit(proposed)).rejects.toBeInstanceOf(ProcessCrash);
    const [dispute] = (await world.stripe.disputes.list({ payment_intent: paymentIntent })).data;
    await world.sandbox.control.request('POST', `/disputes/${dispute?.id}/escalate`);
    await kill(a);
    const settled = await recoverUntilSettled(b, effectId);
    expect(settled).toMatchObject({ effectId, outcome: 'REFUSED:stale_premise_at_recovery' });
    expect(await refundsOf(paymentIntent)).toEqual([]);
    const receipt = await verifiedReceipt(b, effectId);
    expect(receipt).toMatchObject({ outcome: 'REFUSED:stale_premise_at_recovery', happened: false, refused: { code: 'REFUSED:stale_premise_at_recovery' } });
    expect(receipt.recheckedAtRecovery?.changes).toEqual([{ field: 'chargebacks', was: [], now: [dispute?.id] }]);
  });

  it('a refused key on the premise read keeps its configuration code (not retryable), and nothing is sent', async () => {
    const a = await node('a');
    const { paymentIntent } = await pay(world.stripe);
    const { proposal: proposed } = await proposal(a, paymentIntent);
    await world.sandbox.control.failNext({ status: 401, type: 'authentication_error', message: 'Invalid API Key provided', count: 1 });
    const failure = await a.gate.submit(proposed).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'target_misconfigured', retryable: false });
    expect(await refundsOf(paymentIntent)).toEqual([]);
  });
});

describe('the gate with the Stripe credit target', () => {
  it('commits a goodwill credit: the premise re-read is four reads made together (the customer, its subscriptions, credit notes and balance transactions), then the create', async () => {
    const credits = createCreditTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs });
    const a = await node('credits', credits);
    const customer = await world.stripe.customers.create({ name: 'Subscriber' });
    const terms = approvalTerms({ scope: `customer:${customer.id}`, capCents: 1_000 });
    await a.approvals.grant(terms);
    const effect = { kind: 'credit', customer: customer.id, amount: 1_000, incident: 'INC-9f8e7d', description: 'Goodwill credit for the outage' } as const;
    const draft = { requestId: `case-${customer.id}`, agent: 'support-bot', approval: terms.id, premises: {}, effect };
    const effectId = a.gate.effectIdOf(draft);
    const premises = await credits.readFacts(effectId, effect, CREDIT_FACTS, { timeoutMs: 2_000 });
    // A customer billed in no currency yet: its credits land in the credit's own (customer_currency).
    expect(premises).toEqual({ subscription_status: null, incident_compensation: 0, currency: 'usd', customer_currency: 'usd' });
    const since = await mark(world.sandbox);
    expect(await a.gate.submit({ ...draft, premises })).toMatchObject({ effectId, outcome: 'COMMITTED' });
    const calls = await callsSince(world.sandbox, since);
    expect(calls).toHaveLength(5);
    expect(calls.slice(0, -1).sort()).toEqual([`GET /v1/customers/${customer.id}`, `GET /v1/customers/${customer.id}/balance_transactions`, 'GET /v1/credit_notes', 'GET /v1/subscriptions'].sort());
    expect(calls.at(-1)).toBe(`POST /v1/customers/${customer.id}/balance_transactions`);
    const [credited] = (await world.stripe.customers.listBalanceTransactions(customer.id)).data;
    expect(credited).toMatchObject({ amount: -1_000, type: 'adjustment', metadata: { interlock_effect_id: effectId, interlock_incident: 'INC-9f8e7d' } });
    expect(await verifiedReceipt(a, effectId)).toMatchObject({ outcome: 'COMMITTED', happened: true, evidence: credited?.id });
  });

  it('sends credits in INTERLOCK_CREDIT_CURRENCY, and refuses one in another currency than the customer\'s balance before the network', async () => {
    const customer = await world.stripe.customers.create({ name: 'Kunde' });
    await world.stripe.customers.createBalanceTransaction(customer.id, { amount: -200, currency: 'eur' });
    const effect = { kind: 'credit', customer: customer.id, amount: 1_000, incident: 'INC-e0e0e0' } as const;
    const submitOn = async (workerId: string, creditCurrency: string) => {
      const side = stripeSide({ ...config, stripeSecretKey: TEST_KEY, stripeApiBase: world.sandbox.url, creditCurrency });
      const at = await node(workerId, side.target);
      const terms = approvalTerms({ scope: `customer:${customer.id}`, capCents: 1_000 });
      await at.approvals.grant(terms);
      const draft = { requestId: `case-${workerId}`, agent: 'support-bot', approval: terms.id, premises: {}, effect };
      return at.gate.submit({ ...draft, premises: await side.target.readFacts(at.gate.effectIdOf(draft), effect, CREDIT_FACTS, { timeoutMs: 2_000 }) });
    };
    const since = await mark(world.sandbox);
    const inUsd = await submitOn('credits-usd', 'usd');
    expect(inUsd).toMatchObject({ outcome: 'REFUSED:target_error' });
    expect((await callsSince(world.sandbox, since)).filter((call) => call.startsWith('POST'))).toEqual([]);
    expect(await submitOn('credits-eur', 'eur')).toMatchObject({ outcome: 'COMMITTED' });
    const [credited] = (await world.stripe.customers.listBalanceTransactions(customer.id)).data;
    expect(credited).toMatchObject({ amount: -1_000, currency: 'eur' });
  });

  it('refuses a second credit for an incident already compensated, though its premises were read after the first: no two credits for one incident', async () => {
    const credits = createCreditTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs });
    const a = await node('credits-twice', credits);
    const customer = await world.stripe.customers.create({ name: 'Subscriber' });
    const terms = approvalTerms({ scope: `customer:${customer.id}`, capCents: 2_000, maxUses: 2 });
    await a.approvals.grant(terms);
    const effect = { kind: 'credit', customer: customer.id, amount: 1_000, incident: 'INC-5d4c3b' } as const;
    const decide = async (requestId: string) => {
      const draft = { requestId, agent: 'support-bot', approval: terms.id, premises: {}, effect };
      const effectId = a.gate.effectIdOf(draft);
      return a.gate.submit({ ...draft, premises: await credits.readFacts(effectId, effect, CREDIT_FACTS, { timeoutMs: 2_000 }) });
    };
    expect(await decide('ticket-1')).toMatchObject({ outcome: 'COMMITTED' });
    // Another agent, another request, the same incident: decided on the facts as they are now (1000 cents already).
    // The dispatch step refuses it (the first credit holds the incident), before the target's own read of Stripe.
    const second = await decide('ticket-2');
    expect(second).toMatchObject({ outcome: 'REFUSED:over_cap' });
    expect(await verifiedReceipt(a, second.effectId)).toMatchObject({ happened: false, refused: { code: 'REFUSED:over_cap', reason: expect.stringContaining('INC-5d4c3b') } });
    const landed = (await world.stripe.customers.listBalanceTransactions(customer.id)).data;
    expect(landed.map((transaction) => transaction.amount)).toEqual([-1_000]);
  });
});

