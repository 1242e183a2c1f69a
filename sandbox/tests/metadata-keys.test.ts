// RULE: every metadata key the caller sends is kept as data, `__proto__` included, on create, on update and in the
// event's previous_attributes. stripe-facts.md §7 (line 363) limits keys only to 50 of at most 40 characters without
// `[`/`]`. A plain-object copy (`result[key] = item`) takes `__proto__` as the prototype setter and drops the pair
// while answering 200; core/params.ts now builds metadata maps without a prototype, which still serialize as
// Stripe's JSON does.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../index.js';
import type { Sandbox } from '../index.js';

let sandbox: Sandbox;
let stripe: Stripe;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, delays: 'fast' });
  stripe = new Stripe('sk_test_meta', { host: sandbox.host, port: sandbox.port, protocol: 'http', maxNetworkRetries: 0 });
});
afterAll(() => sandbox.close());

const post = async (path: string, body: string) => {
  const response = await fetch(`${sandbox.url}${path}`, {
    method: 'POST',
    headers: { Authorization: 'Bearer sk_test_meta', 'Content-Type': 'application/x-www-form-urlencoded' },
    body,
  });
  expect(response.status).toBe(200);
  // JSON.parse keeps `__proto__` as an own key, as any client reading Stripe's JSON does.
  return JSON.parse(await response.text()) as { id: string; metadata: Record<string, string> };
};

describe('sandbox: metadata keys', () => {
  it('keeps a `__proto__` key as data, on create, on update and in the update\'s previous_attributes', async () => {
    const intent = await stripe.paymentIntents.create({ amount: 5000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
    // The form body as any client sends it (stripe-facts.md §1: `a[b]=v`).
    const created = await post('/v1/refunds', `payment_intent=${intent.id}&amount=100&metadata[__proto__]=x&metadata[order]=1`);
    expect(Object.keys(created.metadata).sort()).toEqual(['__proto__', 'order']);
    expect(created.metadata['__proto__']).toBe('x');

    const updated = await post(`/v1/refunds/${created.id}`, 'metadata[__proto__]=y');
    expect(Object.keys(updated.metadata).sort()).toEqual(['__proto__', 'order']);
    expect(updated.metadata['__proto__']).toBe('y');

    const events = await stripe.events.list({ type: 'refund.updated' });
    const event = events.data.find((e) => (e.data.object as { id?: string }).id === created.id);
    const previous = JSON.parse(JSON.stringify(event?.data.previous_attributes ?? {})) as { metadata?: Record<string, unknown> };
    expect(Object.keys(previous.metadata ?? {})).toEqual(['__proto__']);
    expect(previous.metadata?.['__proto__']).toBe('x');
  });

  it('deletes a `__proto__` key with an empty value and keeps the others', async () => {
    const intent = await stripe.paymentIntents.create({ amount: 5000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
    const created = await post('/v1/refunds', `payment_intent=${intent.id}&amount=100&metadata[__proto__]=x&metadata[order]=1`);
    const updated = await post(`/v1/refunds/${created.id}`, 'metadata[__proto__]=');
    expect(updated.metadata).toEqual({ order: '1' });
  });
});
