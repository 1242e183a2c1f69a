// Rule: a fact event the consumer acts on never vanishes in silence. A dispute whose object names its charge but no
// payment_intent (nullable in Stripe's spec) is routed through its charge, read at Stripe for its PaymentIntent, and
// recorded on the effects committed on that payment; an event of a fact type that still cannot be routed (a charge
// Stripe does not know, an object of the wrong shape) is logged as a warning naming the event and why.
//
// Rule: a facts job that fails for good puts the effects its event concerns on the reconciler's watch list; for a
// dispute naming only its charge, those are the effects committed on the charge's payment, found by reading the charge
// at Stripe. When Stripe cannot answer that read either, the log says the effects cannot be told (and the event must
// be resent), never that the event concerns no effect the gate made. Before, such a dispute concerned nothing: its
// chargeback was lost once the refund was older than the reconciler's horizon.
import { describe, expect, it } from 'vitest';
import { createFacts, signWebhookBody, stripeSide, type StripeEvent, type StripeReader } from '../../src/interlock.js';
import { sleep } from '../support/harness.js';
import { pay, sharedFactsRig } from './facts-rig.js';

// The sandbox's events are not forwarded: only the events posted below reach the route.
const rig = sharedFactsRig({ forward: false });

let seq = 0;
/** Posts a signed event of `type` carrying `object` to the route; its id and the route's answer. */
async function post(type: string, object: Record<string, unknown>): Promise<{ id: string; status: number }> {
  seq += 1;
  const id = `evt_bycharge${Date.now()}x${seq}`;
  const body = JSON.stringify({ id, object: 'event', api_version: '2019-02-19', created: Math.floor(Date.now() / 1000), livemode: false, pending_webhooks: 1, request: { id: null, idempotency_key: null }, type, data: { object } });
  const res = await fetch(rig.webhookUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signWebhookBody(body, rig.forwardSecret) }, body });
  return { id, status: res.status };
}

const warned = (eventId: string) => rig.warnings.filter((line) => line['event'] === eventId);

describe('a dispute event whose object names only its charge', () => {
  it('is recorded on the effect committed on the charge\'s payment, with the exposure it brings', async () => {
    await rig.sandbox.control.configure({ pending_refund_dispute_window_seconds: 0 });
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
    const sent = await post('charge.dispute.created', { id: dispute.id, object: 'dispute', charge, status: 'needs_response', amount: 10_000, currency: 'usd' });
    expect(sent.status).toBe(200);
    await rig.drained();
    const verification = await rig.receipt(effectId);
    expect(verification.finalMoney.disputes).toEqual([expect.objectContaining({ id: dispute.id, charge })]);
    expect(verification.exposure).toMatchObject({ dispute: dispute.id, cents: 2_000 });
    expect(warned(sent.id)).toEqual([]);
  });

  it('reads its charge at Stripe once: the read that routes it is the one its facts are weighed against', async () => {
    await rig.sandbox.control.configure({ pending_refund_dispute_window_seconds: 0 });
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
    const real = stripeSide(rig.config).reader;
    const reads: string[] = [];
    const counting: StripeReader = { ...real, charge: async (id) => (reads.push(id), (await real.charge?.(id)) ?? null) };
    const event: StripeEvent = { id: `evt_bychargeonce${Date.now()}`, type: 'charge.dispute.created', data: { object: { id: dispute.id, object: 'dispute', charge, status: 'needs_response', amount: 10_000 } } };
    expect((await createFacts(rig.stores, counting).applyEvent(event)).map((applied) => applied.effectId)).toEqual([effectId]);
    expect(reads).toEqual([charge]);
    expect((await rig.receipt(effectId)).finalMoney.disputes).toEqual([expect.objectContaining({ id: dispute.id, chargeAmount: 10_000, chargeRefunded: 2_000 })]);
  });

  it('is logged, naming the event and why, when Stripe does not know the charge', async () => {
    const sent = await post('charge.dispute.created', { id: 'du_unknownCharge0001', object: 'dispute', charge: 'ch_notAtStripe0001', status: 'needs_response', amount: 10_000, currency: 'usd' });
    expect(sent.status).toBe(200);
    await rig.drained();
    expect(warned(sent.id)).toEqual([expect.objectContaining({ why: expect.stringContaining('Stripe does not know its charge ch_notAtStripe0001') })]);
  });
});

describe('a dispute event whose object names only its charge, whose facts job failed for good', () => {
  /** Waits until the facts worker logged, at warn or above, a line about the event whose message says `what`. */
  async function logged(eventId: string, what: string): Promise<Record<string, unknown>> {
    for (let i = 0; i < 200; i += 1) {
      const line = warned(eventId).find((one) => String(one['msg']).includes(what));
      if (line !== undefined) return line;
      await sleep(50);
    }
    throw new Error(`nothing logged about ${eventId} saying "${what}": ${JSON.stringify(warned(eventId))}`);
  }

  it("puts the effects committed on the charge's payment on the reconciler's watch list", async () => {
    await rig.sandbox.control.configure({ pending_refund_dispute_window_seconds: 0 });
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
    await rig.redis.zrem(rig.stores.keys.watch, effectId);
    // Stripe refuses the job's read of the charge (a key being rotated): the job fails for good; the next read answers.
    await rig.sandbox.control.failNext({ method: 'GET', path: `/v1/charges/${charge}`, status: 401, count: 1 });
    const sent = await post('charge.dispute.created', { id: dispute.id, object: 'dispute', charge, status: 'needs_response', amount: 10_000, currency: 'usd' });
    expect(sent.status).toBe(200);
    expect(await logged(sent.id, "on the reconciler's watch list")).toMatchObject({ effects: [effectId] });
    expect(await rig.redis.zscore(rig.stores.keys.watch, effectId)).not.toBeNull();
    expect(await rig.facts.concerned({ id: sent.id, type: 'charge.dispute.created', data: { object: { id: dispute.id, object: 'dispute', charge, status: 'needs_response' } } })).toEqual([effectId]);
  });

  it('says the effects cannot be told when Stripe cannot answer the read of the charge either, not that it concerns none', async () => {
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    await rig.refund(paymentIntent, 2_000);
    await rig.sandbox.control.failNext({ method: 'GET', path: `/v1/charges/${charge}`, status: 401, count: 100 });
    try {
      const sent = await post('charge.dispute.created', { id: 'du_chargeUnread0001', object: 'dispute', charge, status: 'needs_response', amount: 10_000, currency: 'usd' });
      expect(sent.status).toBe(200);
      const line = await logged(sent.id, 'cannot be told');
      expect(line['msg']).toContain(`only its charge ${charge}, and Stripe could not answer its read`);
      expect(line['msg']).toContain('resend the event from Stripe');
      expect(warned(sent.id).filter((one) => String(one['msg']).includes('concerns no effect'))).toEqual([]);
    } finally {
      await rig.sandbox.control.clearFaults();
    }
  });
});

describe('an event of a fact type that cannot be routed', () => {
  it('is logged as a warning naming the event and why', async () => {
    const sent = await post('charge.dispute.updated', { object: 'dispute', charge: 'ch_whatever', status: 'needs_response' });
    expect(sent.status).toBe(200);
    await rig.drained();
    expect(warned(sent.id)).toEqual([expect.objectContaining({ why: 'its dispute object is not a dispute with an id' })]);
  });
});
