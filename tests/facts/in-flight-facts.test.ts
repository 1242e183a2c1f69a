// Payment facts that arrive while a refund on the payment is in flight (dispatched, not yet settled): the refund
// landed at Stripe, but the gate has not heard (the answer was lost, and Stripe answers every later request about
// refunds with a 500), and the charge is charged back meanwhile. The dispute's event finds no committed effect on the
// payment; once the refund commits, the receipt must still show the chargeback and the `exposure` alert (refund plus
// chargeback: the merchant pays twice) must be raised within seconds, not at the reconciler's next pass (15 min).
// A refund's own events in flight carry the effect id, but while the dispatch is open the id and amount do not tell the
// send's refund from one made by hand with them (src/facts/apply.ts holdInFlight). Changed expectation: such an event
// is no longer recorded on the open effect as it comes (DISPATCHED, OBSERVED, COMMITTED); it marks the payment as a
// dispute does, and the settle's re-read records the refund right after the commit (DISPATCHED, COMMITTED, OBSERVED),
// seconds after the settle. Nothing is lost, and a failure's `failed_after_landed` alert comes seconds after the commit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFacts, type StripeEvent } from '../../src/interlock.js';
import { callsSince, mark } from '../stripe/stripe-support.js';
import { pay, startFactsRig, waitFor, type FactsRig } from './facts-rig.js';

let rig: FactsRig;

beforeAll(async () => {
  rig = await startFactsRig();
  // A chargeback leaves a refund that stood standing (Stripe fails one only within its window; here there is none).
  await rig.sandbox.control.configure({ pending_refund_dispute_window_seconds: 0 });
}, 60_000);

afterAll(async () => {
  await rig?.close();
});

const kindsOf = async (effectId: string) => ((await rig.stores.journal.receipt(effectId))?.entries ?? []).map((entry) => entry.kind);

describe('payment facts that come while a refund is in flight', () => {
  it('a chargeback that came while the refund was in flight reaches its receipt, with the exposure alert, seconds after the refund commits', async () => {
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    await rig.sandbox.control.idle();
    // The refund is made at Stripe but no answer comes back (each resend replays it, and is lost too), and every
    // lookup of the payment's refunds is answered 500: the dispatch stays open until the faults are cleared.
    await rig.sandbox.control.dropNext({ path: '/v1/refunds', method: 'POST', when: 'after', count: 100_000 });
    await rig.sandbox.control.failNext({ path: '/v1/refunds', method: 'GET', status: 500, count: 100_000 });
    const effectId = await rig.submit({ kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer' });
    await waitFor('the refund to reach Stripe', async () => ((await rig.sandbox.control.requests()).some((request) => request.method === 'POST' && request.path === '/v1/refunds' && request.fault === 'drop_after') ? true : null));

    const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
    await waitFor('the facts worker to take the dispute', async () => (rig.applied.some(({ event }) => event.type === 'charge.dispute.created' && event.data.object.id === dispute.id) ? true : null));
    // The fact came while the dispatch was open: nothing was settled yet.
    expect(await kindsOf(effectId)).not.toContain('COMMITTED');
    // The refund's own event carries the effect id (read as the event says: Stripe still answers 500 to reads of
    // refunds), but the dispatch is open: it is recorded on nothing yet, and the payment is marked.
    const created = (await rig.stripe.events.list({ type: 'refund.created' })).data.find((event) => (event.data.object as { payment_intent?: unknown }).payment_intent === paymentIntent);
    if (created === undefined) throw new Error('Stripe has no refund.created for the payment');
    const refundId = (created.data.object as { id: string }).id;
    const asEvent = createFacts(rig.stores, null, { rereadBeforeAppend: false });
    expect(await asEvent.applyEvent(JSON.parse(JSON.stringify(created)) as StripeEvent)).toEqual([]);
    expect((await kindsOf(effectId)).slice(-1)).toEqual(['DISPATCHED']);

    await rig.sandbox.control.clearFaults();
    const answer = await rig.effects.waitFor(effectId, 30_000);
    expect(answer?.outcome).toMatch(/^COMMITTED/);
    const committedAt = Date.now();
    const alert = await waitFor('the exposure alert', async () => (await rig.stores.alerts.list()).find((raised) => raised.effectId === effectId && raised.kind === 'exposure'), 5_000);
    expect(Date.now() - committedAt).toBeLessThan(5_000);
    expect(alert.disputes).toContain(dispute.id);
    // The refund's fact is not lost: the settle's re-read records it right after the commit (the dispute's with it).
    await waitFor('the refund on the receipt', async () => ((await rig.observed(effectId)).some((entry) => entry.objectId === refundId) ? true : null), 5_000);
    expect(Date.now() - committedAt).toBeLessThan(5_000);
    const verification = await rig.receipt(effectId);
    expect(verification.valid).toBe(true);
    expect((await kindsOf(effectId)).slice(2, 5)).toEqual(['DISPATCHED', 'COMMITTED', 'OBSERVED']);
    // The dispute is on the receipt from the sender's re-read after the settle: the event itself was recorded on nothing.
    expect((await rig.observed(effectId)).filter((entry) => entry.objectId === dispute.id).map((entry) => entry.source)).toEqual(['reread']);
    expect(verification.finalMoney.disputes.map((one) => one.id)).toContain(dispute.id);
    expect(verification.exposure).toMatchObject({ refundCents: 2_000, chargebackCents: 10_000 });
  }, 90_000);

  it('a dispute whose exposure alert could not be written is alerted when its event is retried, though its fact is recorded already', async () => {
    await rig.stopFactsWorker();
    try {
      const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
      const effectId = await rig.refund(paymentIntent, 2_000);
      const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
      await rig.sandbox.control.idle();
      const created = (await rig.stripe.events.list({ type: 'charge.dispute.created' })).data.find((event) => (event.data.object as { id?: unknown }).id === dispute.id);
      if (created === undefined) throw new Error('Stripe has no charge.dispute.created for the dispute');
      const event = JSON.parse(JSON.stringify(created)) as StripeEvent;
      // The first run records the fact, then Redis refuses the alert's write: the job fails and is retried.
      const raise = rig.stores.alerts.raise;
      rig.stores.alerts.raise = () => Promise.reject(new Error('Redis refused the write'));
      try {
        await expect(createFacts(rig.stores, null, { rereadBeforeAppend: false }).applyEvent(event)).rejects.toThrow('Redis refused the write');
      } finally {
        rig.stores.alerts.raise = raise;
      }
      expect((await rig.observed(effectId)).map((entry) => entry.objectId)).toContain(dispute.id);
      expect((await rig.stores.alerts.list()).filter((alert) => alert.effectId === effectId)).toEqual([]);
      // Another event saying the same (a first delivery) reads nothing more; the job's retry finds the fact recorded
      // (nothing appended) and still raises what the receipt calls for.
      const facts = createFacts(rig.stores, null, { rereadBeforeAppend: false });
      expect(await facts.applyEvent(event)).toMatchObject([{ effectId, appended: 0, duplicates: 1, alerts: [] }]);
      const [retried] = await facts.applyEvent(event, { again: true });
      expect(retried).toMatchObject({ effectId, appended: 0, duplicates: 1 });
      const alert = (await rig.stores.alerts.list()).find((raised) => raised.effectId === effectId && raised.kind === 'exposure');
      expect(alert?.disputes).toContain(dispute.id);
    } finally {
      rig.startFactsWorker();
    }
  }, 60_000);

  it('a refund that failed while it was in flight raises failed_after_landed seconds after it commits, as a chargeback there does', async () => {
    // The facts worker is off: the refund's own event is applied here, as the worker would while reads still work.
    await rig.stopFactsWorker();
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    await rig.sandbox.control.idle();
    await rig.sandbox.control.dropNext({ path: '/v1/refunds', method: 'POST', when: 'after', count: 100_000 });
    await rig.sandbox.control.failNext({ path: '/v1/refunds', method: 'GET', status: 500, count: 100_000 });
    const effectId = await rig.submit({ kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer' });
    const refundId = await waitFor('the refund at Stripe', async () => {
      const created = (await rig.stripe.events.list({ type: 'refund.created' })).data.find((event) => (event.data.object as { payment_intent?: unknown }).payment_intent === paymentIntent);
      return (created?.data.object as { id?: string } | undefined)?.id;
    });
    await rig.sandbox.control.request('POST', `/refunds/${refundId}/fail`, { failure_reason: 'expired_or_canceled_card' });
    const failed = await waitFor('refund.failed', async () => (await rig.stripe.events.list({ type: 'refund.failed' })).data.find((event) => (event.data.object as { id?: unknown }).id === refundId));
    // Changed expectation: the failure is recorded on nothing while the dispatch is open (it was appended as it came);
    // the payment is marked, and the settle's re-read records it right after the commit.
    const asEvent = createFacts(rig.stores, null, { rereadBeforeAppend: false });
    expect(await asEvent.applyEvent(JSON.parse(JSON.stringify(failed)) as StripeEvent)).toEqual([]);
    expect((await kindsOf(effectId)).slice(-1)).toEqual(['DISPATCHED']);

    await rig.sandbox.control.clearFaults();
    const answer = await rig.effects.waitFor(effectId, 30_000);
    expect(answer?.outcome).toMatch(/^COMMITTED/);
    const alert = await waitFor('the failed_after_landed alert', async () => (await rig.stores.alerts.list()).find((one) => one.effectId === effectId && one.kind === 'failed_after_landed'), 5_000);
    expect(alert.resolvedAt).toBeNull();
    const verification = await rig.receipt(effectId);
    expect({ answer: verification.answer, finalMoney: verification.finalMoney.status }).toEqual({ answer: 'returned', finalMoney: 'not_returned' });
    expect((await kindsOf(effectId)).slice(2, 5)).toEqual(['DISPATCHED', 'COMMITTED', 'OBSERVED']);
    expect((await rig.observed(effectId)).filter((entry) => entry.objectId === refundId).map((entry) => entry.status)).toEqual(['failed']);
  }, 90_000);

  it('a refund on a payment no dispute came for reads nothing at Stripe after its refund is created', async () => {
    await rig.stopFactsWorker();
    try {
      const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
      const since = await mark(rig.sandbox);
      await rig.refund(paymentIntent, 2_000);
      const calls = await callsSince(rig.sandbox, since);
      // The settle found no payment fact on the subject: no re-read follows the send (the pipeline's two calls a refund).
      expect(calls.at(-1), calls.join(', ')).toBe('POST /v1/refunds');
    } finally {
      rig.startFactsWorker();
    }
  }, 60_000);

  // A refund made by hand on the payment, with the effect's id copied into its metadata and then failed at Stripe, is not
  // what the effect's send made (another amount): it is not recorded on the effect, so once the effect commits its own
  // refund, which succeeded, the receipt says the money was returned and stays valid (DESIGN §8).
  it("a refund made by hand naming the effect in flight is not recorded on it, and does not decide the final money of the effect whose own refund succeeded", async () => {
    await rig.stopFactsWorker();
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const foreign = await rig.stripe.refunds.create({ payment_intent: paymentIntent, amount: 500 });
    await rig.sandbox.control.idle();
    await rig.sandbox.control.dropNext({ path: '/v1/refunds', method: 'POST', when: 'after', count: 100_000 });
    await rig.sandbox.control.failNext({ path: '/v1/refunds', method: 'GET', status: 500, count: 100_000 });
    const effectId = await rig.submit({ kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer' });
    await waitFor('the gated refund at Stripe', async () => ((await rig.stripe.events.list({ type: 'refund.created' })).data.some((event) => { const o = event.data.object as { payment_intent?: unknown; id?: unknown }; return o.payment_intent === paymentIntent && o.id !== foreign.id; }) ? true : null));
    // The operator copies the effect id onto their own refund (the answer of this POST is dropped, it still executes).
    await rig.stripe.refunds.update(foreign.id, { metadata: { interlock_effect_id: effectId } }).catch(() => undefined);
    await rig.sandbox.control.request('POST', `/refunds/${foreign.id}/fail`, { failure_reason: 'expired_or_canceled_card' });
    const failed = await waitFor('refund.failed', async () => (await rig.stripe.events.list({ type: 'refund.failed' })).data.find((event) => (event.data.object as { id?: unknown }).id === foreign.id));
    // Applied as the facts worker would (Stripe's reads of refunds answer 500 meanwhile, so the event speaks for itself).
    const asEvent = createFacts(rig.stores, null, { rereadBeforeAppend: false });
    const applied = await asEvent.applyEvent(JSON.parse(JSON.stringify(failed)) as StripeEvent);
    await rig.sandbox.control.clearFaults();
    const answer = await rig.effects.waitFor(effectId, 30_000);
    expect(answer?.outcome).toMatch(/^COMMITTED/);
    rig.startFactsWorker();
    const own = (await rig.receipt(effectId)).evidence as string;
    expect((await rig.stripe.refunds.retrieve(own)).status).toBe('succeeded');
    // Once the facts worker has recorded the own refund's facts (its events, held while the worker was stopped).
    const receipt = await rig.until(effectId, (verification) => verification.finalMoney.refunds.some((refund) => refund.id === own));
    expect(applied.every((item) => item.effectId !== effectId)).toBe(true);
    expect(receipt.finalMoney.refunds.map((refund) => refund.id)).toEqual([own]);
    expect(receipt.finalMoney.status).toBe('returned');
    expect(receipt.answerMatchesFinalMoney).toBe(true);
    expect(receipt).toMatchObject({ valid: true, problems: [] });
  }, 90_000);
});
