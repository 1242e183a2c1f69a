// Rule: a refund that one effect committed is that effect's own and no other's (DESIGN §8, "metadata is a lead, not
// proof"): relabelling it at Stripe with the id of another effect of the same amount on the same payment, one that was
// sent and refused, must not record it as that effect's late landing (money counted twice, a receipt saying "returned"
// for a send that never landed), by any path (a refund event, charge.refunded, a re-read), and its later facts still
// reach the effect that committed it.
import { describe, expect, it } from 'vitest';
import { pay, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

/** E1 commits a $20 refund R1; E2 (another $20 on the same payment) is sent and refused; R1 is then relabelled with E2's id. */
async function relabelled(): Promise<{ paymentIntent: string; e1: string; e2: string; r1: string }> {
  const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
  const e1 = await rig.refund(paymentIntent, 2_000);
  const r1 = (await rig.receipt(e1)).evidence as string;
  await rig.sandbox.control.failNext({ path: '/v1/refunds', method: 'POST', status: 402, code: 'card_declined', message: 'Your card was declined.' });
  const e2 = await rig.submit({ kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer' });
  expect(await rig.effects.waitFor(e2, 15_000)).toMatchObject({ outcome: 'REFUSED:target_error' });
  expect((await rig.receipt(e2)).happened).toBe(false);
  // A copy-paste in the dashboard: refund.updated fires.
  await rig.stripe.refunds.update(r1, { metadata: { interlock_effect_id: e2 } });
  await settled();
  return { paymentIntent, e1, e2, r1 };
}

/** E2 never landed; the payment's cap counts `movedCents` (E1's refund, until Stripe fails it and gives it back). */
async function neverLanded(paymentIntent: string, e2: string, movedCents = 2_000): Promise<void> {
  const second = await rig.receipt(e2);
  const moved = (await rig.stores.approvals.subjectCap(`payment:${paymentIntent}`)).movedCents;
  expect({ happened: second.happened, lateLanding: second.lateLanding?.evidence ?? null, status: second.finalMoney.status, movedCents: moved }).toEqual({ happened: false, lateLanding: null, status: 'not_returned', movedCents });
  const alerts = (await rig.stores.alerts.list()).filter((alert) => alert.effectId === e2).map((alert) => alert.kind);
  expect(alerts).not.toContain('late_landing');
}

describe('facts: a committed refund relabelled with the id of another dispatched effect', () => {
  it('is not recorded as the other effect landing late (refund.updated, then a re-read of that effect)', async () => {
    const { paymentIntent, e2, r1 } = await relabelled();
    await rig.facts.reread(e2);
    // Only one refund exists at Stripe on the payment: R1, E1's.
    expect((await rig.stripe.refunds.list({ payment_intent: paymentIntent })).data.map((refund) => refund.id)).toEqual([r1]);
    await neverLanded(paymentIntent, e2);
  });

  it('is recorded on the effect that committed it, not the one it now names, from charge.refunded', async () => {
    const { paymentIntent, e1, e2, r1 } = await relabelled();
    const applied = await rig.facts.applyEvent({ id: `evt_cr_${paymentIntent}`, type: 'charge.refunded', data: { object: { id: `ch_${paymentIntent}`, object: 'charge', payment_intent: paymentIntent } } });
    expect(applied.map((each) => each.effectId)).toEqual([e1]);
    await neverLanded(paymentIntent, e2);
    const bundle = await rig.stores.journal.receipt(e2);
    expect(bundle?.entries.some((entry) => entry.kind === 'OBSERVED' && entry.objectId === r1)).toBe(false);
  });

  it("does not take the committing effect's later facts: R1 failing after the relabel reaches E1's receipt", async () => {
    const { paymentIntent, e1, e2, r1 } = await relabelled();
    // R1 fails at Stripe: its refund.failed event (no reconciliation pass yet).
    await rig.sandbox.control.request('POST', `/refunds/${r1}/fail`, { failure_reason: 'expired_or_canceled_card' });
    await settled();
    expect((await rig.receipt(e1)).finalMoney.status).toBe('not_returned');
    await neverLanded(paymentIntent, e2, 0);
  });
});
