// An event whose facts job failed for good (Stripe refused its re-read with a 401 while the key was being rotated, or
// its retries ran out during an outage) keeps its job, under the event id, for 30 days. Stripe was answered 200 at
// the first delivery and never retries; a person's redelivery (Dashboard "Resend", `stripe events resend`) is how
// the event gets applied beyond the reconciler's horizon. The rule: a redelivered event whose job failed runs again,
// instead of being taken as a duplicate of a job that applied nothing.
import { describe, expect, it } from 'vitest';
import { signWebhookBody } from '../../src/interlock.js';
import { sleep } from '../support/harness.js';
import { pay, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

describe('an event whose facts job failed for good', () => {
  it('runs again when it is delivered again once the cause is fixed, and its chargeback reaches the receipt', async () => {
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    await rig.sandbox.control.idle();
    await rig.drained();
    // The key is refused for a while (a rotation): every read answers 401, and the dispute's job fails for good.
    await rig.sandbox.control.failNext({ method: 'GET', status: 401, count: 100_000 });
    const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
    await rig.sandbox.control.idle();
    for (let i = 0; i < 100 && (await rig.factsQueue.queue.getJobCounts('failed')).failed === 0; i += 1) await sleep(50);
    await rig.sandbox.control.clearFaults();
    const event = (await rig.stripe.events.list({ type: 'charge.dispute.created' })).data.find((one) => (one.data.object as { id?: string }).id === dispute.id);
    if (event === undefined) throw new Error('no charge.dispute.created for the dispute');
    const job = await rig.factsQueue.queue.getJob(event.id);
    expect(await job?.getState()).toBe('failed');
    expect(job?.failedReason).toContain('target_misconfigured');
    expect((await rig.receipt(effectId)).finalMoney.disputes).toEqual([]);

    // The operator resends the event: the same event id, a fresh signature.
    const body = JSON.stringify(event);
    const deliver = () => fetch(rig.webhookUrl, { method: 'POST', body, headers: { 'content-type': 'application/json', 'stripe-signature': signWebhookBody(body, rig.forwardSecret) } });
    expect((await deliver()).status).toBe(200);
    for (let i = 0; i < 100 && (await rig.factsQueue.queue.getJob(event.id).then((again) => again?.getState())) !== 'completed'; i += 1) await sleep(50);
    expect(await (await rig.factsQueue.queue.getJob(event.id))?.getState()).toBe('completed');
    const verification = await rig.receipt(effectId);
    expect(verification.finalMoney.disputes.map((one) => one.id)).toContain(dispute.id);

    // Delivered once more after it was applied, it is a duplicate again: nothing runs twice.
    expect((await deliver()).status).toBe(200);
    await rig.drained();
    expect((await rig.receipt(effectId)).finalMoney.disputes.filter((one) => one.id === dispute.id)).toHaveLength(1);
  }, 60_000);
});
