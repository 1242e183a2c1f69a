// Rule: a fact event the consumer acts on never vanishes in silence. A dispute whose object names its charge but no
// payment_intent (nullable in Stripe's spec) is routed through its charge, read at Stripe for its PaymentIntent, and
// recorded on the effects committed on that payment; an event of a fact type that still cannot be routed (a charge
// Stripe does not know, an object of the wrong shape) is logged as a warning naming the event and why.
import { describe, expect, it } from 'vitest';
import { signWebhookBody } from '../../src/interlock.js';
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

  it('is logged, naming the event and why, when Stripe does not know the charge', async () => {
    const sent = await post('charge.dispute.created', { id: 'du_unknownCharge0001', object: 'dispute', charge: 'ch_notAtStripe0001', status: 'needs_response', amount: 10_000, currency: 'usd' });
    expect(sent.status).toBe(200);
    await rig.drained();
    expect(warned(sent.id)).toEqual([expect.objectContaining({ why: expect.stringContaining('Stripe does not know its charge ch_notAtStripe0001') })]);
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
