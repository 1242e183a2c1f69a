// A takeover's resend refused before it reaches Stripe (DESIGN §7). A tier-1 takeover resends at once while the dead
// sender's request may still be running at Stripe, trusting Stripe's idempotency key to make the two one. The credit
// target checks first that the incident was not compensated meanwhile, and refuses the resend itself when billing did
// compensate it during the outage: that refusal never reaches the key. Settled at once (a lookup made then finds
// nothing yet), the effect read REFUSED:target_error with its cap given back while the dead sender's credit landed a
// moment later. The rule: in recovery a refusal settles the effect only once a lookup that finds nothing can be
// believed (the earlier send's deadline or its sender's proven death, plus the settle margin); until then it waits.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { ProcessCrash, type Target } from '../../src/core/target.js';
import { currentOutcome } from '../../src/core/verify.js';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import { approvalTerms, kill, sleep, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { recoverUntilSettled, startStripeWorld, type StripeWorld } from './stripe-support.js';

// The settle margin (2 s) covers the dead sender's request, held HOLD_MS at Stripe after it began executing.
const TIMING: Partial<Config> = { sendTimeoutMs: 1_000, settleMarginMs: 2_000, claimTtlMs: 2_500, heartbeatMs: 100, heartbeatTtlMs: 500 };
const HOLD_MS = 1_200;

let world: StripeWorld;
let config: Config;
let key: ReturnType<typeof testKey>;
const nodes: TestNode[] = [];

beforeAll(async () => {
  world = await startStripeWorld();
  config = testConfig(TIMING);
  key = testKey();
});
afterAll(async () => {
  await Promise.all(nodes.map((node) => node.close().catch(() => undefined)));
  await world.close();
  const redis = new Redis(config.redisUrl);
  const stale = await redis.keys(`${config.keyPrefix}:*`);
  if (stale.length > 0) await redis.del(...stale);
  await redis.quit();
});

/**
 * Worker a dispatches a credit for `incident` and dies: after its request began executing at Stripe (held there
 * HOLD_MS, so it lands later) when `inFlight`, before any request left otherwise. Then billing compensates the same
 * incident with a balance credit of its own, and worker b is the one left to recover the effect.
 */
async function creditWhoseSenderDied(name: string, inFlight: boolean) {
  const customer = await world.stripe.customers.create({ name });
  const incident = `INC-${name}`;
  const path = `/v1/customers/${customer.id}/balance_transactions`;
  const credits = createCreditTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs });
  const dying: Target = {
    ...credits,
    async apply(effectId, effect, context) {
      if (!inFlight) throw new ProcessCrash('before the request left');
      // The read first (as the gate's premise check makes it), so the sandbox's hold applies to the credit itself and
      // not to the target's own reads.
      await credits.readFacts(effectId, effect, ['incident_compensation'], { timeoutMs: 1_000, premiseCheck: true, ...(context.attempt === undefined ? {} : { attempt: context.attempt }), ...(context.neverSent === true ? { neverSent: true } : {}) });
      await world.sandbox.control.slowDown({ path, ms: HOLD_MS, count: 1 });
      credits.apply(effectId, effect, context).catch(() => undefined);
      await sleep(150);
      throw new ProcessCrash('after the request left');
    },
  };
  const a = await startNode({ config, target: dying, key: key.key, workerId: `${name}-a` });
  const b = await startNode({ config, target: createCreditTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs }), key: key.key, workerId: `${name}-b` });
  nodes.push(a, b);
  const terms = approvalTerms({ id: `ap_${name}`, scope: `customer:${customer.id}`, capCents: 1_000, maxUses: 1 });
  await a.approvals.grant(terms);
  const proposal = { requestId: `case-${name}`, agent: 'support-bot', approval: terms.id, premises: { subscription_status: null }, effect: { kind: 'credit', customer: customer.id, amount: 1_000, incident } };
  const effectId = a.gate.effectIdOf(proposal);
  await expect(a.gate.submit(proposal)).rejects.toBeInstanceOf(ProcessCrash);
  await kill(a);
  await world.stripe.customers.createBalanceTransaction(customer.id, { amount: -500, currency: 'usd', metadata: { incident } });
  const ours = async () => (await world.stripe.customers.listBalanceTransactions(customer.id)).data.filter((txn) => txn.metadata?.interlock_effect_id === effectId);
  return { b, effectId, partition: `customer:${customer.id}`, terms, ours };
}

it('a resend refused before the network while the dead sender\'s credit is still running waits, then commits the credit that landed', async () => {
  const { b, effectId, partition, terms, ours } = await creditWhoseSenderDied('in-flight', true);

  const first = await b.gate.recover({ only: [effectId] });
  expect(first.settled.find((item) => item.effectId === effectId)?.outcome ?? null, 'settled inside the quiet period as').toBeNull();
  expect(first.waiting.map((item) => item.effectId)).toContain(effectId);

  // a's request finishes at Stripe: its credit lands. Nothing the journal says contradicts it, and the approval
  // still holds the cents that moved.
  await sleep(HOLD_MS + 300);
  expect(await ours()).toHaveLength(1);
  expect(currentOutcome(await b.journal.entries(partition, effectId))).toBeNull();
  expect((await b.approvals.describe(terms.id)).snapshot?.reservedCents).toBe(1_000);

  const { outcome } = await recoverUntilSettled(b, effectId, 10_000);
  expect(outcome).toBe('COMMITTED_ON_QUERY');
  expect(await ours(), 'credits of the effect at Stripe').toHaveLength(1);
  expect((await b.approvals.describe(terms.id)).snapshot?.reservedCents).toBe(1_000);
});

it('a resend refused before the network when nothing of the dead sender\'s left settles REFUSED:target_error once the quiet period is over, without resending for ever', async () => {
  const { b, effectId, partition, terms, ours } = await creditWhoseSenderDied('never-left', false);

  const started = Date.now();
  const { outcome, passes } = await recoverUntilSettled(b, effectId, 15_000);
  expect(outcome).toBe('REFUSED:target_error');
  expect(await ours(), 'credits of the effect at Stripe').toHaveLength(0);
  // The refusal waited for the quiet period (settle margin 2 s) and no more than a few passes.
  expect(Date.now() - started).toBeGreaterThanOrEqual(TIMING.settleMarginMs ?? 0);
  expect(passes.length).toBeLessThanOrEqual(6);
  expect(currentOutcome(await b.journal.entries(partition, effectId))).toBe('REFUSED:target_error');
  // Nothing moved, so the cents and the use went back to the approval.
  expect((await b.approvals.describe(terms.id)).snapshot?.reservedCents ?? 0).toBe(0);
});
