// The refund target against real sandbox objects through the official SDK (issue 9 §2 and §7): its facts as the
// refund worker's premises define them (scenarios.md §2.4), the send with its metadata and key, the lookup over
// every page and status, the refusal of a refund larger than what remains before anything is sent, and the
// Stripe calls each costs, counted in the sandbox's request log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEffect } from '../../src/core/effects.js';
import { Rejected, type Target } from '../../src/core/target.js';
import { createStripeReads } from '../../src/stripe/reads.js';
import { createRefundTarget, REFUND_FACTS } from '../../src/stripe/refund-target.js';
import { callsSince, effectIdFor, mark, pay, sendContext, startStripeWorld, TEST_ATTEMPT, type StripeWorld } from './stripe-support.js';

let world: StripeWorld;
let target: Target;
beforeAll(async () => {
  world = await startStripeWorld();
  target = createRefundTarget(world.client, { sendTimeoutMs: 2_000 });
});
afterAll(() => world.close());

const FACTS = [...REFUND_FACTS];
const READ = { timeoutMs: 2_000 };
/** The gate's own premise read right before a send (the attempt its send names): what apply's check may use instead of reading again. */
const PREMISE_CHECK = { ...READ, premiseCheck: true, attempt: TEST_ATTEMPT };
const refund = (paymentIntent: string, amount = 2_000) => ({ kind: 'refund' as const, paymentIntent, amount });
const control = (path: string, body: object = {}) => world.sandbox.control.request('POST', path, body);

async function disputeOf(paymentIntent: string): Promise<string> {
  const [dispute] = (await world.stripe.disputes.list({ payment_intent: paymentIntent })).data;
  if (dispute === undefined) throw new Error('no dispute');
  return dispute.id;
}

describe('the refund target', () => {
  it('is tier 1, queryable, keeps keys for Stripe\'s 24 hours, moves refunds and reads the five refund facts', () => {
    expect(target).toMatchObject({ tier: 1, queryable: true, dedupWindowMs: 24 * 60 * 60 * 1000, sendTimeoutMs: 2_000, kinds: ['refund'], facts: ['chargebacks', 'refunded_by_others', 'refundable', 'charge_status', 'currency'] });
  });
});

describe('readFacts: the premises of a refund', () => {
  it('reads an untouched payment as no chargebacks, nothing refunded by others, all refundable, charge succeeded, in its currency', async () => {
    const { paymentIntent } = await pay(world.stripe);
    expect(await target.readFacts(effectIdFor('plain'), refund(paymentIntent), FACTS, READ)).toEqual({ chargebacks: [], refunded_by_others: 0, refundable: 10_000, charge_status: 'succeeded', currency: 'usd' });
  });

  it('does not count an inquiry as a chargeback, and counts it once it escalated (same dispute id)', async () => {
    const { paymentIntent } = await pay(world.stripe, 'pm_card_createDisputeInquiry');
    const effectId = effectIdFor('inquiry');
    expect(await target.readFacts(effectId, refund(paymentIntent), ['chargebacks'], READ)).toEqual({ chargebacks: [] });
    const dispute = await disputeOf(paymentIntent);
    await control(`/disputes/${dispute}/escalate`);
    expect(await target.readFacts(effectId, refund(paymentIntent), ['chargebacks'], READ)).toEqual({ chargebacks: [dispute] });
  });

  it('lists every chargeback on the charge, sorted by id', async () => {
    const { paymentIntent, charge } = await pay(world.stripe, 'pm_card_createMultipleDisputes');
    await world.sandbox.control.openDispute({ charge, kind: 'inquiry' });
    const disputes = (await world.stripe.disputes.list({ payment_intent: paymentIntent })).data;
    const chargebacks = disputes.filter((d) => !d.status.startsWith('warning_')).map((d) => d.id);
    expect(chargebacks).toHaveLength(2);
    expect(await target.readFacts(effectIdFor('multiple'), refund(paymentIntent), ['chargebacks'], READ)).toEqual({ chargebacks: [...chargebacks].sort() });
  });

  it('counts refunds by others that are not failed or canceled, leaves out this effect\'s own, and what remains follows', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('others');
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 1_000 });
    const failed = await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 300 });
    await control(`/refunds/${failed.id}/fail`, { failure_reason: 'expired_or_canceled_card' });
    const canceled = await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 200 });
    await control(`/refunds/${canceled.id}/require_action`);
    await world.stripe.refunds.cancel(canceled.id);
    const waiting = await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 400 });
    await control(`/refunds/${waiting.id}/require_action`);
    await target.apply(effectIdFor('another effect'), refund(paymentIntent, 500), sendContext());
    await target.apply(effectId, refund(paymentIntent), sendContext());
    // 1000 by hand, 400 waiting for the customer, 500 by another effect; not the failed, canceled or own ones.
    expect(await target.readFacts(effectId, refund(paymentIntent), FACTS, READ)).toEqual({ chargebacks: [], refunded_by_others: 1_900, refundable: 8_100, charge_status: 'succeeded', currency: 'usd' });
  });

  it('reads every refund of a charge with more than a page of them in its expansion', async () => {
    const { paymentIntent } = await pay(world.stripe);
    for (let i = 0; i < 12; i += 1) await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 100 });
    const since = await mark(world.sandbox);
    expect(await target.readFacts(effectIdFor('many'), refund(paymentIntent), FACTS, READ)).toMatchObject({ refunded_by_others: 1_200, refundable: 8_800 });
    // The first ten came with the charge; one more page brought the rest.
    expect(await callsSince(world.sandbox, since)).toEqual([`GET /v1/payment_intents/${paymentIntent}`, 'GET /v1/refunds']);
  });

  it('reads a payment without a charge as nothing refundable and no charge status', async () => {
    const intent = await world.stripe.paymentIntents.create({ amount: 5_000, currency: 'usd' });
    expect(await target.readFacts(effectIdFor('no charge'), refund(intent.id), FACTS, READ)).toEqual({ chargebacks: [], refunded_by_others: 0, refundable: 0, charge_status: null, currency: 'usd' });
    await expect(target.apply(effectIdFor('no charge'), refund(intent.id), sendContext())).rejects.toMatchObject({ details: { code: 'amount_exceeds_refundable' } });
  });

  it('reads only what is asked: no Stripe call for no facts, no dispute read for an undisputed charge', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const since = await mark(world.sandbox);
    expect(await target.readFacts(effectIdFor('none'), refund(paymentIntent), [], READ)).toEqual({});
    expect(await callsSince(world.sandbox, since)).toEqual([]);
    await target.readFacts(effectIdFor('one'), refund(paymentIntent), FACTS, READ);
    expect(await callsSince(world.sandbox, since)).toEqual([`GET /v1/payment_intents/${paymentIntent}`]);
  });
});

describe('apply: the refund, keyed and tagged with the effect', () => {
  it('creates the refund with the effect id (and the request, when the context names it) in its metadata, and returns a compact summary', async () => {
    const { paymentIntent, charge } = await pay(world.stripe);
    const effectId = effectIdFor('apply');
    const landed = await target.apply(effectId, { ...refund(paymentIntent), reason: 'requested_by_customer', metadata: { case: 'case-4471' } }, sendContext(2_000, { requestId: 'case-4471/refund' }));
    expect(landed).toEqual({ id: expect.stringMatching(/^re_/), object: 'refund', status: 'succeeded', amount: 2_000, currency: 'usd', charge, payment_intent: paymentIntent, failure_reason: null, created: expect.any(Number) });
    const stored = await world.stripe.refunds.retrieve(String(landed.id));
    expect(stored.metadata).toEqual({ case: 'case-4471', interlock_effect_id: effectId, interlock_request: 'case-4471/refund' });
    expect(stored.reason).toBe('requested_by_customer');
  });

  it('takes only as much caller metadata as fits Stripe\'s 50 keys beside the gate\'s own two: 49 keys are refused when the effect is read, the 48 allowed land', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const keys = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`note_${index}`, 'v']));
    expect(() => parseEffect({ ...refund(paymentIntent), metadata: keys(49) })).toThrow(/effect\.metadata: at most 48 metadata keys/);
    const effectId = effectIdFor('metadata');
    const landed = await target.apply(effectId, parseEffect({ ...refund(paymentIntent), metadata: keys(48) }), sendContext(2_000, { requestId: 'case-metadata' }));
    const stored = await world.stripe.refunds.retrieve(String(landed.id));
    expect(Object.keys(stored.metadata ?? {})).toHaveLength(50);
    expect(stored.metadata).toMatchObject({ interlock_effect_id: effectId, interlock_request: 'case-metadata' });
  });

  it('sends under the effect id as Idempotency-Key: a second apply finds the same refund in its read and answers it, replayed, without a second POST, and Stripe holds one', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('twice');
    const since = await mark(world.sandbox);
    const first = await target.apply(effectId, refund(paymentIntent), sendContext());
    const second = await target.apply(effectId, refund(paymentIntent), sendContext());
    expect(second).toEqual({ ...first, replayed: true });
    expect((await world.sandbox.control.requests(since)).filter((r) => r.method === 'POST').map((r) => r.idempotency_key)).toEqual([effectId]);
    expect((await world.stripe.refunds.list({ payment_intent: paymentIntent })).data).toHaveLength(1);
  });

  it('refuses a refund larger than what remains before anything is sent, with the facts the gate just read', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 9_000 });
    const effectId = effectIdFor('too much');
    // Premises decided on an already-small remainder compare equal at dispatch; apply's check is what refuses.
    expect(await target.readFacts(effectId, refund(paymentIntent), FACTS, PREMISE_CHECK)).toMatchObject({ refundable: 1_000 });
    const since = await mark(world.sandbox);
    const error = await target.apply(effectId, refund(paymentIntent), sendContext()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Rejected);
    expect((error as Rejected).details).toEqual({ code: 'amount_exceeds_refundable', status: null });
    expect((error as Rejected).message).toContain('A refund of $20.00 is more than the $10.00 still refundable');
    expect(await callsSince(world.sandbox, since)).toEqual([]);
  });

  it('weighs only a read made for this refund\'s payment: one made under the effect id for another payload (a conflicting retry, read ahead) does not stand in', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const other = await pay(world.stripe);
    await world.stripe.refunds.create({ payment_intent: other.paymentIntent });
    const effectId = effectIdFor('conflicting retry');
    expect(await target.readFacts(effectId, refund(paymentIntent), FACTS, READ)).toMatchObject({ refundable: 10_000 });
    // The same request id retried with another payment, fully refunded: its facts are read before the conflict is seen.
    expect(await target.readFacts(effectId, refund(other.paymentIntent), FACTS, READ)).toMatchObject({ refundable: 0 });
    await expect(target.apply(effectId, refund(paymentIntent), sendContext())).resolves.toMatchObject({ status: 'succeeded', amount: 2_000 });
  });

  it('refuses it before the send also when nobody read the facts first, reading the payment itself', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 9_500 });
    const since = await mark(world.sandbox);
    await expect(target.apply(effectIdFor('unread'), refund(paymentIntent), sendContext())).rejects.toMatchObject({ details: { code: 'amount_exceeds_refundable' } });
    expect(await callsSince(world.sandbox, since)).toEqual([`GET /v1/payment_intents/${paymentIntent}`]);
    expect((await world.stripe.refunds.list({ payment_intent: paymentIntent })).data).toHaveLength(1);
  });

  it('lets a resend of a refund that already landed through: its own refund does not count against it', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('resend');
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 7_000 });
    await target.apply(effectId, refund(paymentIntent, 3_000), sendContext());
    expect(await target.readFacts(effectId, refund(paymentIntent, 3_000), FACTS, READ)).toMatchObject({ refunded_by_others: 7_000, refundable: 3_000 });
    await expect(target.apply(effectId, refund(paymentIntent, 3_000), sendContext())).resolves.toMatchObject({ replayed: true, amount: 3_000 });
  });
});

describe('query: the refund this effect made, found by its metadata', () => {
  it('finds it over every page of the payment\'s refunds, in any status, and nothing for an effect that made none', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const paged = createRefundTarget(world.client, { sendTimeoutMs: 2_000, pageSize: 3 });
    const effectId = effectIdFor('paged');
    const own = await paged.apply(effectId, refund(paymentIntent, 500), sendContext());
    for (let i = 0; i < 7; i += 1) await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 100, metadata: { interlock_effect_id: effectIdFor(`other ${i}`) } });
    await control(`/refunds/${String(own.id)}/fail`, { failure_reason: 'expired_or_canceled_card' });
    const since = await mark(world.sandbox);
    expect(await paged.query(effectId, refund(paymentIntent, 500), READ)).toMatchObject({ id: own.id, status: 'failed', failure_reason: 'expired_or_canceled_card' });
    // Newest first, three to a page: the oldest refund is on the third page.
    expect(await callsSince(world.sandbox, since)).toEqual(['GET /v1/refunds', 'GET /v1/refunds', 'GET /v1/refunds']);
    expect(await paged.query(effectIdFor('never sent'), refund(paymentIntent, 500), READ)).toBeNull();
  });

  it('returns the refund that matches the effect when several carry its id (the oldest of equals) and names the others', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('tagged twice');
    const tagged = (amount: number) => world.stripe.refunds.create({ payment_intent: paymentIntent, amount, metadata: { interlock_effect_id: effectId } });
    // A second deployment on the account, or a refund copied by hand: 2000 first, then 500 and another 2000.
    const own = await tagged(2_000);
    const smaller = await tagged(500);
    const copy = await tagged(2_000);
    expect(await target.query(effectId, refund(paymentIntent, 2_000), READ)).toMatchObject({ id: own.id, amount: 2_000, others_with_effect_id: [copy.id, smaller.id] });
    expect(await target.query(effectId, refund(paymentIntent, 500), READ)).toMatchObject({ id: smaller.id, amount: 500, others_with_effect_id: [copy.id, own.id] });
    // None of the right amount: nothing this effect sent landed.
    expect(await target.query(effectId, refund(paymentIntent, 700), READ)).toBeNull();
    // One refund with the id: the summary alone, as apply returned it.
    const alone = effectIdFor('alone');
    const single = await target.apply(alone, refund(paymentIntent, 100), sendContext());
    expect(await target.query(alone, refund(paymentIntent, 100), READ)).toEqual(single);
  });
});

describe('Stripe calls per premise check and send', () => {
  it('costs two calls on the happy path: one read of the premises and the create', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('count');
    const since = await mark(world.sandbox);
    await target.readFacts(effectId, refund(paymentIntent), FACTS, PREMISE_CHECK);
    await target.apply(effectId, refund(paymentIntent), sendContext());
    expect(await callsSince(world.sandbox, since)).toEqual([`GET /v1/payment_intents/${paymentIntent}`, 'POST /v1/refunds']);
  });

  it('costs one more read on a charge that was ever disputed: Stripe\'s charge does not list its disputes', async () => {
    const { paymentIntent } = await pay(world.stripe, 'pm_card_createDisputeInquiry');
    const effectId = effectIdFor('count disputed');
    const since = await mark(world.sandbox);
    await target.readFacts(effectId, refund(paymentIntent), FACTS, PREMISE_CHECK);
    await target.apply(effectId, refund(paymentIntent), sendContext());
    expect(await callsSince(world.sandbox, since)).toEqual([`GET /v1/payment_intents/${paymentIntent}`, 'GET /v1/disputes', 'POST /v1/refunds']);
  });
});

describe('reads for after a send (the facts worker)', () => {
  it('reads a refund, a payment\'s refunds and a charge\'s or payment\'s disputes as compact views', async () => {
    const reads = createStripeReads(world.client, { pageSize: 2 });
    const { paymentIntent, charge } = await pay(world.stripe, 'pm_card_createDisputeInquiry');
    const effectId = effectIdFor('reads');
    const own = await target.apply(effectId, refund(paymentIntent), sendContext());
    for (let i = 0; i < 3; i += 1) await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 100 });
    expect(await reads.readRefund(String(own.id))).toEqual({ ...own, interlock_effect_id: effectId });
    const listed = await reads.listRefunds(paymentIntent);
    expect(listed).toHaveLength(4);
    expect(listed.filter((item) => item.interlock_effect_id === effectId)).toEqual([{ ...own, interlock_effect_id: effectId }]);
    const dispute = await disputeOf(paymentIntent);
    const inquiry = { id: dispute, object: 'dispute', status: 'warning_needs_response', chargeback: false, amount: 10_000, currency: 'usd', charge, payment_intent: paymentIntent, reason: expect.any(String), is_charge_refundable: true, created: expect.any(Number) };
    expect(await reads.readDisputesOfCharge(charge)).toEqual([inquiry]);
    await control(`/disputes/${dispute}/escalate`);
    expect(await reads.readDisputesOfPaymentIntent(paymentIntent)).toEqual([{ ...inquiry, status: 'needs_response', chargeback: true, is_charge_refundable: false }]);
  });
});
