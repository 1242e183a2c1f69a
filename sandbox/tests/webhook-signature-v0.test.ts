// Rule: a test-mode delivery's Stripe-Signature carries, after `t=` and `v1=`, a `v0=` entry that verifiers ignore
// (stripe-facts §6.3: "real test-mode deliveries also carry a `v0=` entry, which verifiers ignore"). The sandbox sends
// one, keyed with a secret that is no endpoint's, so a receiver that parses the header by hand and does not ignore it
// fails against the sandbox as it would against Stripe, while stripe-node's own `constructEvent` (which reads only
// `v1`) accepts the delivery. The sandbox used to send `t=…,v1=…` only, so such a receiver passed every test.
import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness, startReceiver } from './helpers.js';
import type { Harness, Received, Receiver } from './helpers.js';

let h: Harness;
let receiver: Receiver;
let secret: string;
beforeAll(async () => {
  h = await startHarness();
  receiver = await startReceiver();
  secret = (await h.stripe.webhookEndpoints.create({ url: receiver.url, enabled_events: ['customer.created'] })).secret ?? '';
});
afterAll(async () => {
  await receiver.close();
  await h.sandbox.close();
});

/** The delivery of `customer.created` for a new customer. */
async function customerCreated(email: string): Promise<{ customer: Stripe.Customer; delivery: Received }> {
  const customer = await h.stripe.customers.create({ email });
  const ofIt = (list: Received[]) => list.find((r) => (r.event as { data?: { object?: { id?: string } } }).data?.object?.id === customer.id);
  const delivery = ofIt(await eventually(async () => receiver.received, (list) => ofIt(list) !== undefined));
  if (delivery === undefined) throw new Error(`no delivery for ${customer.id}`);
  return { customer, delivery };
}

describe('sandbox: the Stripe-Signature of a test-mode delivery', () => {
  it('carries t=, v1= and v0=, in that order, and stripe-node accepts it', async () => {
    const { customer, delivery } = await customerCreated('signature-v0@example.com');
    const header = String(delivery.headers['stripe-signature']);
    const entries = header.split(',').map((part) => part.split('='));
    expect(entries.map(([name]) => name), header).toEqual(['t', 'v1', 'v0']);
    const event = h.stripe.webhooks.constructEvent(delivery.body, header, secret);
    expect(event).toMatchObject({ type: 'customer.created', data: { object: { id: customer.id } } });
    expect(() => h.stripe.webhooks.constructEvent(delivery.body, header, 'whsec_not_this_endpoint')).toThrow(Stripe.errors.StripeSignatureVerificationError);
  });

  it('keys v0 with a secret that is not the endpoint\'s: it never verifies as v1 would', async () => {
    const { delivery } = await customerCreated('signature-v0-key@example.com');
    const entries = Object.fromEntries(String(delivery.headers['stripe-signature']).split(',').map((part) => part.split('=') as [string, string]));
    const underEndpointSecret = createHmac('sha256', secret).update(`${entries['t']}.${delivery.body}`, 'utf8').digest('hex');
    expect(entries['v1']).toBe(underEndpointSecret);
    expect(entries['v0']).toMatch(/^[0-9a-f]{64}$/);
    expect(entries['v0']).not.toBe(underEndpointSecret);
    // A header holding only the v0 entry, under the v1 scheme, is refused with the endpoint's secret.
    const v0AsV1 = `t=${entries['t']},v1=${entries['v0']}`;
    expect(() => h.stripe.webhooks.constructEvent(delivery.body, v0AsV1, secret)).toThrow(Stripe.errors.StripeSignatureVerificationError);
  });
});
