// Issue 3, point 3: PaymentIntents confirmed with every test payment method, manual capture, and the charge.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { disputesOf, pay, sleep, startHarness } from './helpers.js';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

const testMethods = [
  'pm_card_visa',
  'pm_card_bypassPending',
  'pm_card_createDispute',
  'pm_card_createDisputeInquiry',
  'pm_card_createDisputeProductNotReceived',
  'pm_card_createMultipleDisputes',
  'pm_card_pendingRefund',
  'pm_card_refundFail',
] as const;

describe('3. payment intents and charges', () => {
  it.each(testMethods)('confirms a payment with %s and links the charge as latest_charge', async (method) => {
    const { intent, charge } = await pay(h.stripe, method, { metadata: { order: '7' }, transfer_group: 'group-7' });
    expect(intent.status).toBe('succeeded');
    expect(intent.amount_received).toBe(10_000);
    expect(intent.payment_method).toMatch(/^pm_/);
    expect(intent.metadata).toEqual({ order: '7' });
    expect(intent.transfer_group).toBe('group-7');
    const read = await h.stripe.charges.retrieve(charge);
    expect(read).toMatchObject({ object: 'charge', amount: 10_000, amount_refunded: 0, refunded: false, paid: true, captured: true, status: 'succeeded', payment_intent: intent.id });
  });

  it('creates an intent without confirming, then confirms it', async () => {
    const intent = await h.stripe.paymentIntents.create({ amount: 2_500, currency: 'usd' });
    expect(intent.status).toBe('requires_payment_method');
    expect(intent.latest_charge).toBeNull();
    const confirmed = await h.stripe.paymentIntents.confirm(intent.id, { payment_method: 'pm_card_visa' });
    expect(confirmed.status).toBe('succeeded');
    expect(confirmed.latest_charge).toMatch(/^ch_/);
  });

  it('with manual capture, authorises first (requires_capture, captured false) and captures later', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_visa', { capture_method: 'manual' });
    expect(intent.status).toBe('requires_capture');
    expect(intent.amount_capturable).toBe(10_000);
    expect((await h.stripe.charges.retrieve(charge)).captured).toBe(false);
    const captured = await h.stripe.paymentIntents.capture(intent.id);
    expect(captured.status).toBe('succeeded');
    expect(await h.stripe.charges.retrieve(charge)).toMatchObject({ captured: true, amount_captured: 10_000 });
  });

  it('captures less than authorised and reports the released rest as refunded', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_visa', { capture_method: 'manual' });
    await h.stripe.paymentIntents.capture(intent.id, { amount_to_capture: 6_000 });
    expect(await h.stripe.charges.retrieve(charge)).toMatchObject({ amount_captured: 6_000, amount_refunded: 4_000, refunded: false });
  });

  it('cancels an authorised intent', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa', { capture_method: 'manual' });
    const canceled = await h.stripe.paymentIntents.cancel(intent.id, { cancellation_reason: 'requested_by_customer' });
    expect(canceled).toMatchObject({ status: 'canceled', cancellation_reason: 'requested_by_customer' });
  });

  it('lists charges by payment_intent and intents newest first', async () => {
    const a = await pay(h.stripe, 'pm_card_visa');
    const b = await pay(h.stripe, 'pm_card_visa');
    const charges = await h.stripe.charges.list({ payment_intent: a.intent.id });
    expect(charges.data.map((c) => c.id)).toEqual([a.charge]);
    const intents = await h.stripe.paymentIntents.list({ limit: 2 });
    expect(intents.data.map((i) => i.id)).toEqual([b.intent.id, a.intent.id]);
  });

  it('updates metadata on an intent and a charge', async () => {
    const { intent, charge } = await pay(h.stripe, 'pm_card_visa');
    expect((await h.stripe.paymentIntents.update(intent.id, { metadata: { k: 'v' } })).metadata).toEqual({ k: 'v' });
    expect((await h.stripe.charges.update(charge, { metadata: { k: 'v' } })).metadata).toEqual({ k: 'v' });
  });

  it('opens no dispute for a plain card', async () => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    await sleep(120);
    expect(await disputesOf(h.stripe, intent.id)).toEqual([]);
  });
});
