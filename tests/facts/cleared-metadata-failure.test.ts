// RULE: only refund events on a payment nothing committed on, whose metadata names no effect, are dropped unread. A
// committed refund whose interlock_effect_id metadata was cleared at Stripe stays its committed effect's, found
// through its payment: its refund.failed event alone (signed, answered 200) turns the receipt to not_returned and
// raises failed_after_landed, as the same event does when the metadata was changed to another id.
import { describe, expect, it } from 'vitest';
import { pay, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

describe('facts: a committed refund whose metadata was cleared', () => {
  it('its refund.failed event alone turns the receipt to not_returned (as for metadata changed to another id)', async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const refundId = (await rig.receipt(effectId)).evidence as string;
    await rig.stripe.refunds.update(refundId, { metadata: { interlock_effect_id: '' } });
    await rig.sandbox.control.request('POST', `/refunds/${refundId}/fail`, { failure_reason: 'expired_or_canceled_card' });
    await rig.sandbox.control.idle();
    await rig.drained();
    // The events were delivered and answered 200 (no reconciler pass here: past its horizon, none would come).
    expect(rig.answers.every((status) => status === 200)).toBe(true);
    expect((await rig.stripe.refunds.retrieve(refundId)).status).toBe('failed');
    const receipt = await rig.receipt(effectId);
    expect(receipt.finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'expired_or_canceled_card' });
    const alerts = (await rig.stores.alerts.list()).filter((alert) => alert.effectId === effectId).map((alert) => alert.kind);
    expect(alerts).toContain('failed_after_landed');
  });
});
