// An exposure alert a person resolved (they answered the first chargeback with the refund as evidence, and won) is
// opened again when a later chargeback puts money at stake on the same refund: the resolution covered the disputes it
// named, not one that did not exist yet.
import { describe, expect, it } from 'vitest';
import { pay, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

describe('a second chargeback after a person resolved the first one\'s exposure', () => {
  it('opens the exposure alert again, naming the new dispute', async () => {
    await rig.sandbox.control.configure({ pending_refund_dispute_window_seconds: 0 });
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const first = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
    await rig.until(effectId, (verification) => verification.exposure !== null);
    await rig.sandbox.control.idle();
    await rig.drained();
    const alertId = `exposure:${effectId}`;
    await expect.poll(async () => (await rig.stores.alerts.get(alertId))?.resolvedAt, { timeout: 5_000 }).toBeNull();
    await rig.stores.alerts.resolve(alertId, 'alice');
    await rig.stripe.disputes.update(first.id, { evidence: { uncategorized_text: 'winning_evidence' } });
    await rig.until(effectId, (verification) => verification.finalMoney.disputes.some((dispute) => dispute.id === first.id && dispute.status === 'won'));
    const second = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
    const verification = await rig.until(effectId, (now) => now.exposure !== null);
    expect(verification.exposure?.disputes).toEqual([second.id]);
    await expect.poll(async () => (await rig.stores.alerts.get(alertId))?.resolvedAt, { timeout: 5_000 }).toBeNull();
    expect((await rig.stores.alerts.get(alertId))?.disputes).toEqual([second.id]);
  });

  it('stays resolved while the facts name only the disputes the person resolved it with', async () => {
    await rig.sandbox.control.configure({ pending_refund_dispute_window_seconds: 0 });
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
    await rig.until(effectId, (verification) => verification.exposure !== null);
    await rig.sandbox.control.idle();
    await rig.drained();
    const alertId = `exposure:${effectId}`;
    await rig.stores.alerts.resolve(alertId, 'alice');
    await rig.facts.reread(effectId);
    expect((await rig.stores.alerts.get(alertId))?.resolvedBy).toBe('alice');
  });
});
