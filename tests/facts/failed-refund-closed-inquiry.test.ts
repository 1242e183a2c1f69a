// RULE: the failed_after_landed alert tells the operator to wait for the dispute only while an open chargeback could
// still return the money. An inquiry moves no money, and a closed one (warning_closed) never will: on a charge whose
// only dispute is such an inquiry, nothing but a new refund returns the customer's money, so the action must not
// hold the refund back on it.
import { describe, expect, it } from 'vitest';
import { sleep } from '../support/harness.js';
import { pay, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

describe('facts: failed_after_landed on a charge with a closed inquiry', () => {
  it('does not tell the operator to wait for a dispute that can never return the money', async () => {
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const refundId = (await rig.receipt(effectId)).evidence as string;
    const inquiry = await rig.sandbox.control.openDispute({ charge, kind: 'inquiry' });
    await rig.stripe.disputes.update(inquiry.id, { evidence: { uncategorized_text: 'winning_evidence' } });
    for (let i = 0; i < 100 && (await rig.stripe.disputes.retrieve(inquiry.id)).status !== 'warning_closed'; i += 1) await sleep(50);
    expect((await rig.stripe.disputes.retrieve(inquiry.id)).status).toBe('warning_closed');
    await rig.sandbox.control.request('POST', `/refunds/${refundId}/fail`, { failure_reason: 'expired_or_canceled_card' });
    await rig.sandbox.control.idle();
    await rig.drained();
    const receipt = await rig.until(effectId, (v) => v.finalMoney.status === 'not_returned' && v.finalMoney.disputes.some((d) => d.status === 'warning_closed'));
    expect(receipt.exposure).toBeNull();
    const alert = (await rig.stores.alerts.list()).find((one) => one.effectId === effectId && one.kind === 'failed_after_landed');
    expect(alert).toBeDefined();
    expect(alert?.action).not.toMatch(/do not refund again/i);
    expect(alert?.action).not.toMatch(/dispute will return the money/i);
    expect(alert?.action).toMatch(/refund again under a new approval/i);
  });
});
