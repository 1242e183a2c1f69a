// Rule: a failed_after_landed alert's centsAtStake is what the customer is still owed (src/core/alert-rules.ts). A
// refund that failed because the charge was charged back, where the chargeback was then lost for the whole charge,
// leaves nothing at stake: the customer got the money back through the chargeback. The alert says "do not refund
// again" and counted the refund's $20 at stake all the same (the open-alerts gauge, `interlock alerts`).
import { describe, expect, it } from 'vitest';
import { pay, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

describe('a failed refund whose chargeback was lost', () => {
  it('counts no money at stake once the lost chargeback returned it', async () => {
    await rig.sandbox.control.configure({ pending_refund_dispute_window_seconds: 60 });
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
    await rig.until(effectId, (v) => v.finalMoney.status === 'not_returned');
    await rig.stripe.disputes.update(dispute.id, { evidence: { uncategorized_text: 'losing_evidence' } });
    await rig.until(effectId, (v) => v.finalMoney.disputes.some((d) => d.status === 'lost'));
    await rig.sandbox.control.idle();
    await rig.drained();
    const alertId = `failed_after_landed:${effectId}`;
    await expect.poll(async () => (await rig.stores.alerts.get(alertId))?.action, { timeout: 5_000 }).toMatch(/already got the money back/);
    expect((await rig.stores.alerts.get(alertId))?.centsAtStake).toBe(0);
  });
});
