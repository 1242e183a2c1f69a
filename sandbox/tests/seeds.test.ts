// Every Stripe fact recorded by the real test-mode runs in ../shared/seeds (stripe_dispute scenario) and
// scenarios.md §2.7 / §7, one test each, named after the fact. Timings are checked against the `stripe`
// delay profile where they are short enough to run, and against the profile's values otherwise.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { delayProfiles } from '../core/delays.js';
import { disputesOf, eventually, expectStripeError, firstDispute, pay, raw, sleep, startHarness, startReceiver } from './helpers.js';
import type { Harness, Receiver } from './helpers.js';

let fast: Harness;
let real: Harness;
beforeAll(async () => {
  fast = await startHarness();
  real = await startHarness({ delays: 'stripe' });
});
afterAll(async () => {
  await fast.sandbox.close();
  await real.sandbox.close();
});

// The seeds timed a dispute's appearance from the outside; the sandbox makes the dispute inside the confirming
// request (Stripe's CLI fixtures list it at once and the recorded event order puts charge.dispute.created before
// payment_intent.succeeded), so the observed lag is when its charge.dispute.created webhook arrives.
async function secondsUntilDisputeWebhook(receiver: Receiver, charge: string, since: number): Promise<number> {
  await eventually(
    async () => receiver.received.find((r) => r.event.type === 'charge.dispute.created' && (JSON.parse(r.body) as { data: { object: { charge: string } } }).data.object.charge === charge),
    (found) => found !== undefined,
    5_000,
  );
  return (Date.now() - since) / 1000;
}

async function withDisputeWebhooks<T>(h: Harness, run: (receiver: Receiver) => Promise<T>): Promise<T> {
  const receiver = await startReceiver();
  const endpoint = await h.stripe.webhookEndpoints.create({ url: receiver.url, enabled_events: ['charge.dispute.created'] });
  try {
    return await run(receiver);
  } finally {
    await h.stripe.webhookEndpoints.del(endpoint.id);
    await receiver.close();
  }
}

describe('seeds: stripe_dispute, observed in Stripe test mode', () => {
  it('pm_card_createDispute: chargeback needs_response about 0.6 s after confirm (its webhook; listable when confirm returns); a $20 refund gets 400 "has been charged back; cannot issue a refund."', async () => {
    await withDisputeWebhooks(real, async (receiver) => {
      const started = Date.now();
      const { intent, charge } = await pay(real.stripe, 'pm_card_createDispute');
      expect((await disputesOf(real.stripe, intent.id)).map((d) => d.status)).toEqual(['needs_response']);
      const after = await secondsUntilDisputeWebhook(receiver, charge, started);
      expect(after).toBeGreaterThanOrEqual(0.55);
      expect(after).toBeLessThan(1.2);
      const error = await expectStripeError(real.stripe.refunds.create({ payment_intent: intent.id, amount: 2_000 }));
      expect(error).toMatchObject({ statusCode: 400, type: 'StripeInvalidRequestError', code: 'charge_disputed', message: `Charge ${charge} has been charged back; cannot issue a refund.` });
    });
  });

  it('pm_card_createDisputeProductNotReceived: same chargeback, same 400', async () => {
    const { intent, charge } = await pay(fast.stripe, 'pm_card_createDisputeProductNotReceived');
    expect((await firstDispute(fast.stripe, intent.id)).status).toBe('needs_response');
    const error = await expectStripeError(fast.stripe.refunds.create({ payment_intent: intent.id, amount: 2_000 }));
    expect(error.message).toBe(`Charge ${charge} has been charged back; cannot issue a refund.`);
  });

  it('pm_card_createDisputeInquiry: inquiry warning_needs_response about 0.4 s after confirm (its webhook), no funds withdrawn; a $20 refund succeeds at once', async () => {
    await withDisputeWebhooks(real, async (receiver) => {
      const started = Date.now();
      const { intent, charge } = await pay(real.stripe, 'pm_card_createDisputeInquiry');
      const after = await secondsUntilDisputeWebhook(receiver, charge, started);
      expect(after).toBeGreaterThanOrEqual(0.35);
      expect(after).toBeLessThan(1);
      const inquiry = await firstDispute(real.stripe, intent.id);
      expect(inquiry).toMatchObject({ status: 'warning_needs_response', balance_transactions: [] });
      expect((await real.stripe.refunds.create({ payment_intent: intent.id, amount: 2_000 })).status).toBe('succeeded');
    });
  });

  it('the test cards’ event order: charge.succeeded, charge.dispute.created, payment_intent.succeeded (the dispute is made inside confirm)', async () => {
    for (const card of ['pm_card_createDispute', 'pm_card_createDisputeInquiry']) {
      const { intent, charge } = await pay(fast.stripe, card);
      const events = (await fast.stripe.events.list({ limit: 100 })).data.reverse();
      const about = events.filter((e) => {
        const object = e.data.object as { id?: string; charge?: string };
        return object.id === intent.id || object.id === charge || object.charge === charge;
      });
      const order = about.map((e) => e.type).filter((t) => ['charge.succeeded', 'charge.dispute.created', 'payment_intent.succeeded'].includes(t));
      expect(order).toEqual(['charge.succeeded', 'charge.dispute.created', 'payment_intent.succeeded']);
    }
  });

  it('charge.disputed is already true during the inquiry (and stays true)', async () => {
    const { intent, charge } = await pay(fast.stripe, 'pm_card_createDisputeInquiry');
    const inquiry = await firstDispute(fast.stripe, intent.id);
    expect((await fast.stripe.charges.retrieve(charge)).disputed).toBe(true);
    await fast.stripe.disputes.close(inquiry.id);
    expect((await fast.stripe.charges.retrieve(charge)).disputed).toBe(true);
  });

  it('escalation with escalate_inquiry_evidence + submit=true first moves the dispute to warning_under_review, then needs_response after 4.4–10.3 s', async () => {
    expect(delayProfiles.stripe.inquiryEscalates).toBeGreaterThanOrEqual(4_400);
    expect(delayProfiles.stripe.inquiryEscalates).toBeLessThanOrEqual(10_300);
    const { intent } = await pay(fast.stripe, 'pm_card_createDisputeInquiry');
    const inquiry = await firstDispute(fast.stripe, intent.id);
    const submitted = await fast.stripe.disputes.update(inquiry.id, { evidence: { uncategorized_text: 'escalate_inquiry_evidence' }, submit: true });
    expect(submitted.status).toBe('warning_under_review');
    expect((await eventually(() => fast.stripe.disputes.retrieve(inquiry.id), (d) => d.status === 'needs_response')).id).toBe(inquiry.id);
  });

  it('inquiry escalated with escalate_inquiry_evidence; a refund then gets the same 400', async () => {
    const { intent, charge } = await pay(fast.stripe, 'pm_card_createDisputeInquiry');
    const inquiry = await firstDispute(fast.stripe, intent.id);
    await fast.stripe.disputes.update(inquiry.id, { evidence: { uncategorized_text: 'escalate_inquiry_evidence' }, submit: true });
    await eventually(() => fast.stripe.disputes.retrieve(inquiry.id), (d) => d.status === 'needs_response');
    const error = await expectStripeError(fast.stripe.refunds.create({ payment_intent: intent.id, amount: 2_000 }));
    expect(error.code).toBe('charge_disputed');
    expect(error.message).toBe(`Charge ${charge} has been charged back; cannot issue a refund.`);
  });

  it('at escalation the dispute gains a balance transaction of -10000 (the full charge, even when a partial refund exists), created at the chargeback time', async () => {
    const { intent } = await pay(fast.stripe, 'pm_card_createDisputeInquiry');
    const inquiry = await firstDispute(fast.stripe, intent.id);
    await fast.stripe.refunds.create({ payment_intent: intent.id, amount: 2_000 });
    await fast.sandbox.control.advanceClock(300);
    const before = Math.floor(Date.now() / 1000) + 300;
    await fast.stripe.disputes.update(inquiry.id, { evidence: { uncategorized_text: 'escalate_inquiry_evidence' }, submit: true });
    const escalated = await eventually(() => fast.stripe.disputes.retrieve(inquiry.id), (d) => d.status === 'needs_response');
    expect(escalated.balance_transactions.map((t) => t.amount)).toEqual([-10_000]);
    expect(escalated.balance_transactions[0]?.created).toBeGreaterThanOrEqual(before);
    expect(escalated.balance_transactions[0]?.created).toBeGreaterThan(inquiry.created);
  });

  it('a refund POSTed during warning_under_review is accepted as succeeded and later reads failed (charge_for_pending_refund_disputed), still failed later', async () => {
    const { intent, charge } = await pay(fast.stripe, 'pm_card_createDisputeInquiry');
    const inquiry = await firstDispute(fast.stripe, intent.id);
    await fast.stripe.disputes.update(inquiry.id, { evidence: { uncategorized_text: 'escalate_inquiry_evidence' }, submit: true });
    const refund = await fast.stripe.refunds.create({ payment_intent: intent.id, amount: 2_000 });
    expect(refund.status).toBe('succeeded');
    const failed = await eventually(() => fast.stripe.refunds.retrieve(refund.id), (r) => r.status === 'failed');
    expect(failed.failure_reason).toBe('charge_for_pending_refund_disputed');
    await fast.sandbox.control.advanceClock(60);
    await sleep(50);
    expect((await fast.stripe.refunds.retrieve(refund.id)).status).toBe('failed');
    expect((await fast.stripe.charges.retrieve(charge)).amount_refunded).toBe(0);
  });

  it('a refund during an inquiry escalated afterwards (seconds later): failed, charge_for_pending_refund_disputed', async () => {
    const { intent } = await pay(fast.stripe, 'pm_card_createDisputeInquiry');
    const inquiry = await firstDispute(fast.stripe, intent.id);
    const refund = await fast.stripe.refunds.create({ payment_intent: intent.id, amount: 2_000 });
    await fast.sandbox.control.advanceClock(7);
    await fast.stripe.disputes.update(inquiry.id, { evidence: { uncategorized_text: 'escalate_inquiry_evidence' }, submit: true });
    await eventually(() => fast.stripe.disputes.retrieve(inquiry.id), (d) => d.status === 'needs_response');
    expect(await fast.stripe.refunds.retrieve(refund.id)).toMatchObject({ status: 'failed', failure_reason: 'charge_for_pending_refund_disputed' });
  });

  it('a refund during an inquiry never escalated: still succeeded', async () => {
    const { intent } = await pay(fast.stripe, 'pm_card_createDisputeInquiry');
    await firstDispute(fast.stripe, intent.id);
    const refund = await fast.stripe.refunds.create({ payment_intent: intent.id, amount: 2_000 });
    await sleep(200);
    expect(await fast.stripe.refunds.retrieve(refund.id)).toMatchObject({ status: 'succeeded' });
  });

  it('$20 refund 300 s before escalation stays succeeded (failure_reason null); charge amount_refunded 2000, disputed true; dispute withdrew 10000: out $120 on a $100 payment', async () => {
    const { intent, charge } = await pay(fast.stripe, 'pm_card_createDisputeInquiry');
    const inquiry = await firstDispute(fast.stripe, intent.id);
    const refund = await fast.stripe.refunds.create({ payment_intent: intent.id, amount: 2_000 });
    expect(refund.status).toBe('succeeded');
    await fast.sandbox.control.advanceClock(300);
    await fast.stripe.disputes.update(inquiry.id, { evidence: { uncategorized_text: 'escalate_inquiry_evidence' }, submit: true });
    const chargeback = await eventually(() => fast.stripe.disputes.retrieve(inquiry.id), (d) => d.status === 'needs_response');
    for (const advance of [10, 20, 30, 60, 24]) {
      await fast.sandbox.control.advanceClock(advance);
      const read = await fast.stripe.refunds.retrieve(refund.id);
      expect(read.status).toBe('succeeded');
      expect(read.failure_reason ?? null).toBeNull();
    }
    expect(await fast.stripe.charges.retrieve(charge)).toMatchObject({ amount_refunded: 2_000, disputed: true });
    const withdrawn = -chargeback.balance_transactions.reduce((sum, t) => sum + t.amount, 0);
    expect(withdrawn).toBe(10_000);
    expect(withdrawn + 2_000).toBe(12_000);
  });

  it('idempotent replay wins over the charged-back refusal: same key after the chargeback returns 200 with Idempotent-Replayed: true', async () => {
    const { intent } = await pay(fast.stripe, 'pm_card_createDisputeInquiry');
    const inquiry = await firstDispute(fast.stripe, intent.id);
    const body = `payment_intent=${intent.id}&amount=2000&metadata[case]=4471`;
    const headers = { 'Idempotency-Key': 'refund:case-4471' };
    const first = await raw(fast.sandbox, 'POST', '/v1/refunds', { body, headers });
    expect(first.status).toBe(200);
    await fast.sandbox.control.request('POST', `/disputes/${inquiry.id}/escalate`);
    const replay = await raw(fast.sandbox, 'POST', '/v1/refunds', { body, headers });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.json['id']).toBe(first.json['id']);
    const fresh = await raw(fast.sandbox, 'POST', '/v1/refunds', { body, headers: { 'Idempotency-Key': 'refund:case-4471:new' } });
    expect(fresh.status).toBe(400);
  });

  it('pm_card_createDispute with manual capture: no dispute while authorised; chargeback about 0.45 s after capture (its webhook; listable when capture returns)', async () => {
    await withDisputeWebhooks(real, async (receiver) => {
      const { intent, charge } = await pay(real.stripe, 'pm_card_createDispute', { capture_method: 'manual' });
      await sleep(800);
      expect(await disputesOf(real.stripe, intent.id)).toEqual([]);
      expect(receiver.received).toEqual([]);
      const captured = Date.now();
      await real.stripe.paymentIntents.capture(intent.id);
      expect(await disputesOf(real.stripe, intent.id)).toHaveLength(1);
      const after = await secondsUntilDisputeWebhook(receiver, charge, captured);
      expect(after).toBeGreaterThanOrEqual(0.4);
      expect(after).toBeLessThan(1);
    });
  });

  it('pm_card_createMultipleDisputes: both disputes within a second of the charge; winning the first opens nothing new', async () => {
    const started = Date.now();
    const timed = await pay(real.stripe, 'pm_card_createMultipleDisputes');
    await eventually(() => disputesOf(real.stripe, timed.intent.id), (list) => list.length === 2, 2_000);
    expect((Date.now() - started) / 1000).toBeLessThan(1.2);
    const { intent } = await pay(fast.stripe, 'pm_card_createMultipleDisputes');
    const both = await eventually(() => disputesOf(fast.stripe, intent.id), (list) => list.length === 2);
    const first = both[1]!;
    await fast.stripe.disputes.update(first.id, { evidence: { uncategorized_text: 'winning_evidence' } });
    await eventually(() => fast.stripe.disputes.retrieve(first.id), (d) => d.status === 'won');
    await sleep(150);
    expect(await disputesOf(fast.stripe, intent.id)).toHaveLength(2);
  });

  it('lists return the newest objects first (refunds by payment_intent, limit 100, every status, with id, amount, status, failure_reason, created, metadata)', async () => {
    const { intent } = await pay(fast.stripe, 'pm_card_createDisputeInquiry');
    const inquiry = await firstDispute(fast.stripe, intent.id);
    const older = await fast.stripe.refunds.create({ payment_intent: intent.id, amount: 1_000, metadata: { n: '1' } });
    await fast.sandbox.control.advanceClock(300);
    const newer = await fast.stripe.refunds.create({ payment_intent: intent.id, amount: 2_000, metadata: { n: '2' } });
    await fast.sandbox.control.request('POST', `/disputes/${inquiry.id}/escalate`);
    const listed = await fast.stripe.refunds.list({ payment_intent: intent.id, limit: 100 });
    expect(listed.data.map((r) => [r.id, r.amount, r.status, r.failure_reason ?? null, r.metadata])).toEqual([
      [newer.id, 2_000, 'failed', 'charge_for_pending_refund_disputed', { n: '2' }],
      [older.id, 1_000, 'succeeded', null, { n: '1' }],
    ]);
    expect(listed.data[0]!.created).toBeGreaterThan(listed.data[1]!.created);
  });

  it('concurrent refunds under the charge amount are all accepted', async () => {
    const { intent } = await pay(fast.stripe, 'pm_card_visa');
    const refunds = await Promise.all([1, 2, 3, 4].map(() => fast.stripe.refunds.create({ payment_intent: intent.id, amount: 2_000 })));
    expect(refunds.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    expect((await fast.stripe.refunds.list({ payment_intent: intent.id, limit: 100 })).data).toHaveLength(4);
  });

  it('a full refund with no amount refunds the whole charge', async () => {
    const { intent, charge } = await pay(fast.stripe, 'pm_card_visa');
    expect((await fast.stripe.refunds.create({ payment_intent: intent.id })).amount).toBe(10_000);
    expect(await fast.stripe.charges.retrieve(charge)).toMatchObject({ amount_refunded: 10_000, refunded: true });
  });

  it('confirm stores transfer_group and metadata and sets latest_charge', async () => {
    const { intent } = await pay(fast.stripe, 'pm_card_bypassPending', { transfer_group: 'tg-1', metadata: { case: 'c' } });
    const read = await fast.stripe.paymentIntents.retrieve(intent.id);
    expect(read).toMatchObject({ transfer_group: 'tg-1', metadata: { case: 'c' } });
    expect(read.latest_charge).toMatch(/^ch_/);
  });
});
