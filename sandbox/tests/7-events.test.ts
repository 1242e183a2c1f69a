// Issue 3, point 7: events for every state change, with previous_attributes and request {id, idempotency_key}.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, expectStripeError, firstDispute, pay, startHarness } from './helpers.js';
import type Stripe from 'stripe';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

async function eventsAbout(id: string): Promise<Stripe.Event[]> {
  const all: Stripe.Event[] = [];
  for await (const event of h.stripe.events.list({ limit: 100 })) {
    const object = event.data.object as { id?: string; charge?: string; payment_intent?: string };
    if (object.id === id || object.charge === id || object.payment_intent === id) all.push(event);
  }
  return all.reverse();
}

describe('7. events', () => {
  it('a payment emits payment_intent.created, charge.succeeded, payment_intent.succeeded carrying the request id and key', async () => {
    const intent = await h.stripe.paymentIntents.create({ amount: 1_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true }, { idempotencyKey: 'pay-events' });
    const events = await eventsAbout(intent.id);
    expect(events.map((e) => e.type)).toEqual(['payment_intent.created', 'charge.succeeded', 'payment_intent.succeeded']);
    for (const event of events) expect(event.request).toEqual({ id: intent.lastResponse.requestId, idempotency_key: 'pay-events' });
    expect(events[0]).toMatchObject({ object: 'event', livemode: false, api_version: '2026-10-28.endive' });
  });

  it('a refund emits refund.created then charge.refunded with previous_attributes.amount_refunded', async () => {
    const { charge } = await pay(h.stripe, 'pm_card_visa');
    const refund = await h.stripe.refunds.create({ charge, amount: 2_500 });
    const events = (await eventsAbout(charge)).filter((e) => e.type.startsWith('refund.') || e.type === 'charge.refunded');
    expect(events.map((e) => e.type)).toEqual(['refund.created', 'charge.refunded']);
    expect((events[0]!.data.object as Stripe.Refund).id).toBe(refund.id);
    expect(events[1]!.data.previous_attributes).toEqual({ amount_refunded: 0 });
    expect(events[1]!.request?.id).toBe(refund.lastResponse.requestId);
    expect(events[1]!.request?.idempotency_key).toMatch(/^stripe-node-retry-/);
  });

  it('a failing refund emits refund.updated, charge.refund.updated and refund.failed with previous_attributes and request {id: null, idempotency_key: null}', async () => {
    const { charge } = await pay(h.stripe, 'pm_card_refundFail');
    const refund = await h.stripe.refunds.create({ charge, amount: 1_000 });
    await eventually(() => h.stripe.refunds.retrieve(refund.id), (r) => r.status === 'failed');
    const events = (await eventsAbout(refund.id)).filter((e) => e.type !== 'refund.created');
    expect(events.map((e) => e.type)).toEqual(['refund.updated', 'charge.refund.updated', 'refund.failed']);
    const update = events.find((e) => e.type === 'charge.refund.updated')!;
    expect(update.data.previous_attributes).toEqual({ failure_balance_transaction: null, failure_reason: null, status: 'succeeded' });
    expect(update.data.object).toMatchObject({ status: 'failed', failure_reason: 'expired_or_canceled_card' });
    expect(update.request).toEqual({ id: null, idempotency_key: null });
  });

  it('a pending refund settling emits refund.updated and charge.refund.updated with previous status pending', async () => {
    const { charge } = await pay(h.stripe, 'pm_card_pendingRefund');
    const refund = await h.stripe.refunds.create({ charge, amount: 1_000 });
    await eventually(() => h.stripe.refunds.retrieve(refund.id), (r) => r.status === 'succeeded');
    const updated = (await eventsAbout(refund.id)).filter((e) => e.type === 'refund.updated');
    expect(updated[0]?.data.previous_attributes).toMatchObject({ status: 'pending', pending_reason: 'processing' });
  });

  it('a chargeback emits charge.dispute.created, charge.dispute.funds_withdrawn, then charge.updated (disputed)', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_createDispute');
    await firstDispute(h.stripe, intent.id);
    const types = (await eventsAbout(charge)).map((e) => e.type).filter((t) => t.startsWith('charge.dispute') || t === 'charge.updated');
    expect(types).toEqual(['charge.dispute.created', 'charge.dispute.funds_withdrawn', 'charge.updated']);
  });

  it('evidence, escalation, a win and close emit charge.dispute.updated / funds_withdrawn / funds_reinstated / closed with previous status', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_createDisputeInquiry');
    const inquiry = await firstDispute(h.stripe, intent.id);
    await h.stripe.disputes.update(inquiry.id, { evidence: { uncategorized_text: 'escalate_inquiry_evidence' } });
    await eventually(() => h.stripe.disputes.retrieve(inquiry.id), (d) => d.status === 'needs_response');
    await h.stripe.disputes.update(inquiry.id, { evidence: { uncategorized_text: 'winning_evidence' } });
    await eventually(() => h.stripe.disputes.retrieve(inquiry.id), (d) => d.status === 'won');
    const events = (await eventsAbout(inquiry.id)).filter((e) => e.type.startsWith('charge.dispute'));
    expect(events.map((e) => [e.type, (e.data.previous_attributes as { status?: string } | undefined)?.status ?? null])).toEqual([
      ['charge.dispute.created', null],
      ['charge.dispute.updated', 'warning_needs_response'],
      ['charge.dispute.updated', 'warning_under_review'],
      ['charge.dispute.funds_withdrawn', 'warning_under_review'],
      ['charge.dispute.updated', 'needs_response'],
      ['charge.dispute.funds_reinstated', 'under_review'],
      ['charge.dispute.closed', 'under_review'],
    ]);
  });

  it('evidence is followed by charge.updated on the charge, and so are close and a decision: charge.dispute.updated / closed, then charge.updated', async () => {
    const afterOpening = async (charge: string): Promise<Stripe.Event[]> => (await eventsAbout(charge)).filter((e) => e.type.startsWith('charge.dispute') || e.type === 'charge.updated').slice(3);
    const typesAndRequests = (events: Stripe.Event[]) => events.map((e) => [e.type, e.request?.id ?? null]);

    const submitted = await pay(h.stripe, 'pm_card_createDispute');
    const dispute = await firstDispute(h.stripe, submitted.intent.id);
    const update = await h.stripe.disputes.update(dispute.id, { evidence: { product_description: 'A blender' } });
    const closed = await h.stripe.disputes.close(dispute.id);
    const requested = await afterOpening(submitted.charge);
    expect(typesAndRequests(requested)).toEqual([
      ['charge.dispute.updated', update.lastResponse.requestId],
      ['charge.updated', update.lastResponse.requestId],
      ['charge.dispute.closed', closed.lastResponse.requestId],
      ['charge.updated', closed.lastResponse.requestId],
    ]);
    expect(requested[1]!.data.object).toMatchObject({ id: submitted.charge, object: 'charge', disputed: true });

    const decided = await pay(h.stripe, 'pm_card_createDispute');
    const lost = await firstDispute(h.stripe, decided.intent.id);
    await h.stripe.disputes.update(lost.id, { evidence: { uncategorized_text: 'losing_evidence' } });
    await eventually(() => h.stripe.disputes.retrieve(lost.id), (d) => d.status === 'lost');
    const automatic = (await afterOpening(decided.charge)).slice(2);
    expect(typesAndRequests(automatic)).toEqual([
      ['charge.dispute.closed', null],
      ['charge.updated', null],
    ]);
  });

  it('lists events filtered by type, with wildcards, paginated; retrieves one by id', async () => {
    const { charge } = await pay(h.stripe, 'pm_card_visa');
    await h.stripe.refunds.create({ charge, amount: 100 });
    await h.stripe.refunds.create({ charge, amount: 100 });
    const created = await h.stripe.events.list({ type: 'refund.created', limit: 1 });
    expect(created.data).toHaveLength(1);
    expect(created.has_more).toBe(true);
    const next = await h.stripe.events.list({ type: 'refund.created', limit: 1, starting_after: created.data[0]!.id });
    expect(next.data[0]!.created).toBeLessThanOrEqual(created.data[0]!.created);
    const wildcard = await h.stripe.events.list({ type: 'charge.dispute.*', limit: 100 });
    expect(wildcard.data.every((e) => e.type.startsWith('charge.dispute.'))).toBe(true);
    const several = await h.stripe.events.list({ types: ['refund.created', 'charge.refunded'], limit: 4 });
    expect(new Set(several.data.map((e) => e.type))).toEqual(new Set(['refund.created', 'charge.refunded']));
    expect((await h.stripe.events.retrieve(created.data[0]!.id)).id).toBe(created.data[0]!.id);
    expect((await expectStripeError(h.stripe.events.retrieve('evt_missing'))).statusCode).toBe(404);
  });

  it('refuses more than 20 types[] and type together with types[] (400 invalid_request_error); 20 types[] pass', async () => {
    const names = (n: number) => Array.from({ length: n }, (_, i) => `refund.t${i}`);
    const tooMany = await expectStripeError(h.stripe.events.list({ types: names(21) }));
    expect(tooMany).toMatchObject({ statusCode: 400, rawType: 'invalid_request_error', param: 'types' });
    expect(tooMany.message).toContain('20');
    const both = await expectStripeError(h.stripe.events.list({ type: 'refund.created', types: ['charge.refunded'] }));
    expect(both).toMatchObject({ statusCode: 400, rawType: 'invalid_request_error', param: 'types' });
    expect((await h.stripe.events.list({ types: names(20) })).object).toBe('list');
  });
});
