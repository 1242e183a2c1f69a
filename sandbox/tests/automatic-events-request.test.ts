// Rule: an event that no API request caused carries `request: {id: null, idempotency_key: null}` (OpenAPI 2023-08-16,
// notification_event_request.id: "If null, the event was automatic"; stripe-facts §4.7 for the refund failure:
// `request: {id: null, idempotency_key: null}`, and §6.1 "null for automatic ones (seen on an async refund
// failure)"). The control API stands in for what the bank (a refund settling, failing or needing action) or the card
// network (a dispute opening, an inquiry escalating) does, so the events it causes are automatic ones; the sandbox
// used to stamp them with the control request's id instead.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../index.js';
import type { Sandbox } from '../index.js';

let sandbox: Sandbox;
let stripe: Stripe;
beforeAll(async () => {
  // Stripe's delays: a pm_card_pendingRefund refund then stays pending for 10 s, long enough for the control API to
  // settle it first (under `fast` the sandbox settled it by itself after 100 ms, sometimes before the test did).
  sandbox = await startSandbox({ port: 0, delays: 'stripe' });
  stripe = new Stripe('sk_test_automatic', { host: sandbox.host, port: sandbox.port, protocol: 'http', maxNetworkRetries: 0 });
});
afterAll(() => sandbox.close());

async function paid(paymentMethod = 'pm_card_visa'): Promise<{ intent: string; charge: string }> {
  const intent = await stripe.paymentIntents.create({ amount: 5_000, currency: 'usd', payment_method: paymentMethod, confirm: true });
  return { intent: intent.id, charge: intent.latest_charge as string };
}

/** Every event about `id` created after `since` (an event id), oldest first, as `{type, request}`. */
async function eventsOf(id: string, since: string | undefined): Promise<Array<{ type: string; request: Stripe.Event['request'] }>> {
  const all = (await stripe.events.list({ limit: 100, ...(since === undefined ? {} : { ending_before: since }) })).data;
  return all
    .filter((e) => (e.data.object as { id?: string }).id === id)
    .reverse()
    .map((e) => ({ type: e.type, request: e.request }));
}

const latestEvent = async (): Promise<string | undefined> => (await stripe.events.list({ limit: 1 })).data[0]?.id;
const AUTOMATIC = { id: null, idempotency_key: null };

describe('sandbox: events caused through the control API are automatic', () => {
  it('a refund failed through the control API emits refund.failed / refund.updated / charge.refund.updated with request {id: null, idempotency_key: null}', async () => {
    const { intent } = await paid();
    const refund = await stripe.refunds.create({ payment_intent: intent, amount: 1_000 });
    const since = await latestEvent();
    await sandbox.control.request('POST', `/refunds/${refund.id}/fail`, { failure_reason: 'expired_or_canceled_card' });
    const events = await eventsOf(refund.id, since);
    expect(events.map((e) => e.type).sort()).toEqual(['charge.refund.updated', 'refund.failed', 'refund.updated']);
    for (const event of events) expect(event).toEqual({ type: event.type, request: AUTOMATIC });
  });

  it('a refund settled or sent to requires_action through the control API emits its updates with request {id: null, idempotency_key: null}', async () => {
    const pending = await stripe.refunds.create({ payment_intent: (await paid('pm_card_pendingRefund')).intent, amount: 1_000 });
    const acting = await stripe.refunds.create({ payment_intent: (await paid()).intent, amount: 1_000 });
    const since = await latestEvent();
    await sandbox.control.request('POST', `/refunds/${pending.id}/settle`);
    await sandbox.control.request('POST', `/refunds/${acting.id}/require_action`);
    for (const id of [pending.id, acting.id]) {
      const events = await eventsOf(id, since);
      expect(events.map((e) => e.type)).toEqual(['refund.updated', 'charge.refund.updated']);
      for (const event of events) expect(event).toEqual({ type: event.type, request: AUTOMATIC });
    }
  });

  it('a chargeback opened through the control API emits charge.dispute.created with request {id: null, idempotency_key: null}', async () => {
    const { charge } = await paid();
    await sandbox.control.request('POST', '/disputes', { charge, kind: 'chargeback' });
    const [created] = (await stripe.events.list({ type: 'charge.dispute.created', limit: 1 })).data;
    expect(created?.request).toEqual(AUTOMATIC);
  });

  it('an inquiry opened and escalated through the control API emits every dispute event with request {id: null, idempotency_key: null}', async () => {
    const { charge } = await paid();
    const since = await latestEvent();
    const dispute = (await sandbox.control.request('POST', '/disputes', { charge, kind: 'inquiry' })) as { id: string };
    await sandbox.control.request('POST', `/disputes/${dispute.id}/escalate`);
    const events = await eventsOf(dispute.id, since);
    expect(events.map((e) => e.type)).toEqual(['charge.dispute.created', 'charge.dispute.updated', 'charge.dispute.funds_withdrawn']);
    for (const event of events) expect(event).toEqual({ type: event.type, request: AUTOMATIC });
  });
});
