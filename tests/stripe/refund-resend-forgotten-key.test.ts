// Rule: I2 at most once — a send of a refund that is not the effect's first (an earlier send may have landed) never
// makes a second refund, even under a key Stripe has forgotten: when the payment read right before it holds the effect's
// own refund (carrying its id, with its amount, whatever its status), apply answers that refund as Stripe's replay would
// (`replayed: true`) and sends nothing. Recovery resends inside the key window without a lookup, and the window is
// measured on Redis's clock, which may be behind Stripe's (a step back, a failover to a replica with a lagging clock):
// here the sandbox's clock moves 25 h on and Redis's does not, so a day-old dispatch still looks young to the gate.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import type { Target } from '../../src/core/target.js';
import { ProcessCrash } from '../../src/core/target.js';
import { createRefundTarget, REFUND_FACTS } from '../../src/stripe/refund-target.js';
import { approvalTerms, kill, removePrefixes, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { callsSince, effectIdFor, mark, pay, recoverUntilSettled, sendContext, startStripeWorld, TEST_ATTEMPT, type StripeWorld } from './stripe-support.js';

const TIMING: Partial<Config> = { sendTimeoutMs: 1_000, settleMarginMs: 150, claimTtlMs: 2_500, heartbeatMs: 100, heartbeatTtlMs: 500 };
const DAY_AND_AN_HOUR_S = 25 * 3_600;
const PREMISE_CHECK = { timeoutMs: 2_000, premiseCheck: true, attempt: TEST_ATTEMPT };

let world: StripeWorld;
let target: Target;
let config: Config;
let node: TestNode;
let dying: TestNode;
let keys: ReturnType<typeof testKey>;
beforeAll(async () => {
  world = await startStripeWorld();
  target = createRefundTarget(world.client, { sendTimeoutMs: 2_000 });
  config = testConfig({ ...TIMING, keyPrefix: `it-refund-forgotten-${Math.random().toString(16).slice(2, 10)}` });
  keys = testKey();
  // The real refund target with Stripe's 24 h window: the gate resends on the key alone for 24 h less the margin.
  const real = createRefundTarget(world.client, { sendTimeoutMs: config.sendTimeoutMs });
  node = await startNode({ config, target: real, key: keys.key });
  const crashAfterLanding: Target = {
    ...real,
    async apply(id, effect, context) {
      await real.apply(id, effect, context);
      throw new ProcessCrash('after landing');
    },
  };
  dying = await startNode({ config, target: crashAfterLanding, key: keys.key });
});
afterAll(async () => {
  await dying?.close().catch(() => undefined);
  await node?.close().catch(() => undefined);
  await world?.close();
  if (config !== undefined) await removePrefixes([config.keyPrefix]);
});

const refund = (paymentIntent: string, amount = 2_000) => ({ kind: 'refund' as const, paymentIntent, amount });
const refundsOf = async (paymentIntent: string) => (await world.stripe.refunds.list({ payment_intent: paymentIntent })).data;
const posts = async (since: number) => (await callsSince(world.sandbox, since)).filter((call) => call.startsWith('POST '));

describe('apply: a resend after Stripe forgot the key', () => {
  it('answers the refund that landed, replayed, from the premise read, and sends nothing', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('forgotten');
    const first = await target.apply(effectId, refund(paymentIntent), sendContext());
    await world.sandbox.control.ageIdempotencyKeys(DAY_AND_AN_HOUR_S);
    const since = await mark(world.sandbox);
    await target.readFacts(effectId, refund(paymentIntent), [...REFUND_FACTS], PREMISE_CHECK);
    const again = await target.apply(effectId, refund(paymentIntent), sendContext());
    expect(again).toEqual({ ...first, replayed: true });
    expect(await callsSince(world.sandbox, since)).toEqual([`GET /v1/payment_intents/${paymentIntent}`]);
    expect(await refundsOf(paymentIntent)).toHaveLength(1);
  });

  it('answers the landed refund when nobody read the premises first, reading the payment itself', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('forgotten unread');
    const first = await target.apply(effectId, refund(paymentIntent), sendContext());
    await world.sandbox.control.ageIdempotencyKeys(DAY_AND_AN_HOUR_S);
    const since = await mark(world.sandbox);
    expect(await target.apply(effectId, refund(paymentIntent), sendContext())).toEqual({ ...first, replayed: true });
    expect(await posts(since)).toEqual([]);
    expect(await refundsOf(paymentIntent)).toHaveLength(1);
  });

  it('answers its own refund that failed since, as the lookup would, and does not refund again', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('forgotten failed');
    const first = await target.apply(effectId, refund(paymentIntent), sendContext());
    await world.sandbox.control.request('POST', `/refunds/${String(first.id)}/fail`, { failure_reason: 'expired_or_canceled_card' });
    await world.sandbox.control.ageIdempotencyKeys(DAY_AND_AN_HOUR_S);
    const since = await mark(world.sandbox);
    const again = await target.apply(effectId, refund(paymentIntent), sendContext());
    expect(again).toMatchObject({ id: first.id, status: 'failed', failure_reason: 'expired_or_canceled_card', replayed: true });
    expect(await target.query(effectId, refund(paymentIntent), { timeoutMs: 2_000 })).toMatchObject({ id: first.id, status: 'failed' });
    expect(await posts(since)).toEqual([]);
    expect(await refundsOf(paymentIntent)).toHaveLength(1);
  });

  it('sends when the only refund carrying its id has another amount: that one is not its own', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('other amount');
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 1_500, metadata: { interlock_effect_id: effectId } });
    const since = await mark(world.sandbox);
    const sent = await target.apply(effectId, refund(paymentIntent), sendContext());
    expect(sent).toMatchObject({ amount: 2_000 });
    expect(sent.replayed).toBeUndefined();
    expect(await posts(since)).toEqual(['POST /v1/refunds']);
  });

  it('a first send takes no refund for its own (neverSent) and sends, after one read', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('first send');
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { interlock_effect_id: effectId } });
    const since = await mark(world.sandbox);
    await target.readFacts(effectId, refund(paymentIntent), [...REFUND_FACTS], { ...PREMISE_CHECK, neverSent: true });
    const sent = await target.apply(effectId, refund(paymentIntent), { ...sendContext(), neverSent: true });
    expect(sent.replayed).toBeUndefined();
    expect(await callsSince(world.sandbox, since)).toEqual([`GET /v1/payment_intents/${paymentIntent}`, 'POST /v1/refunds']);
  });
});

it('a landed refund whose worker died is committed by recovery\'s resend under a key Stripe has forgotten, not refunded again', async () => {
  const { paymentIntent } = await pay(world.stripe);
  const terms = approvalTerms({ id: `ap_forgotten_${config.keyPrefix}`, scope: `payment:${paymentIntent}`, capCents: 10_000 });
  await node.approvals.grant(terms);
  const proposal = { requestId: `case-forgotten-${config.keyPrefix}`, agent: 'support-bot', approval: terms.id, premises: { chargebacks: [], refunded_by_others: 0 }, effect: refund(paymentIntent) };
  const effectId = node.gate.effectIdOf(proposal);
  await expect(dying.gate.submit(proposal)).rejects.toBeInstanceOf(ProcessCrash);
  await kill(dying);
  const landed = await refundsOf(paymentIntent);
  expect(landed).toHaveLength(1);

  // Stripe's clock moves a day on, and its keys with it; Redis's does not.
  await world.sandbox.control.advanceClock(DAY_AND_AN_HOUR_S);
  const { outcome } = await recoverUntilSettled(node, effectId, 20_000);
  const refunds = await refundsOf(paymentIntent);
  expect({ outcome, refunds: refunds.map((r) => r.id) }).toEqual({ outcome: 'COMMITTED_BY_RETRY', refunds: landed.map((r) => r.id) });
  expect(JSON.stringify(await node.journal.receipt(effectId))).toContain(String(landed[0]?.id));
}, 40_000);
