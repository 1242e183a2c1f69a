// Rule: an alert a person resolved opens again when a dispute it names is decided (won or lost) after they resolved it
// and what the alert tells them to do changed with it (src/redis/alerts.ts, raise). A failed refund's alert resolved
// on "do not refund again unless the dispute is won by the merchant" must be open again once the merchant wins: the
// customer is owed the refund and nothing else returns it. An exposure resolved on "reply with the refund as evidence"
// must be open again once the chargeback is lost: the merchant paid twice. Both stayed resolved.
import { describe, expect, it } from 'vitest';
import { repairExposures, resolveAlert } from '../../src/interlock.js';
import { pay, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

/** A $20 refund committed on a $100 payment that a chargeback then hits (outside the refund's dispute window): its exposure alert open. */
async function exposedRefund(): Promise<{ effectId: string; alertId: string; disputeId: string }> {
  await rig.sandbox.control.configure({ pending_refund_dispute_window_seconds: 0 });
  const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
  const effectId = await rig.refund(paymentIntent, 2_000);
  const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
  await rig.until(effectId, (v) => v.exposure !== null);
  await rig.sandbox.control.idle();
  await rig.drained();
  const alertId = `exposure:${effectId}`;
  await expect.poll(async () => (await rig.stores.alerts.get(alertId))?.resolvedAt, { timeout: 5_000 }).toBeNull();
  return { effectId, alertId, disputeId: dispute.id };
}

/** The merchant loses the chargeback, and the facts say so. */
async function chargebackLost(effectId: string, disputeId: string): Promise<void> {
  await rig.stripe.disputes.update(disputeId, { evidence: { uncategorized_text: 'losing_evidence' } });
  await rig.until(effectId, (v) => v.finalMoney.disputes.some((d) => d.id === disputeId && d.status === 'lost'));
  await rig.sandbox.control.idle();
  await rig.drained();
}

describe('an alert a person resolved before a dispute it names was decided', () => {
  it('opens failed_after_landed again when the merchant wins the chargeback: the customer is owed the refund', async () => {
    await rig.sandbox.control.configure({ pending_refund_dispute_window_seconds: 60 });
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
    await rig.until(effectId, (v) => v.finalMoney.status === 'not_returned' && v.finalMoney.disputes.length > 0);
    await rig.sandbox.control.idle();
    await rig.drained();
    const alertId = `failed_after_landed:${effectId}`;
    await expect.poll(async () => (await rig.stores.alerts.get(alertId))?.action, { timeout: 5_000 }).toMatch(/do not refund again unless the dispute is won/i);
    // The person did what it said: told the customer, refunded nothing, resolved the alert.
    expect(await rig.stores.alerts.resolve(alertId, 'alice')).toMatchObject({ resolved: true });
    await rig.stripe.disputes.update(dispute.id, { evidence: { uncategorized_text: 'winning_evidence' } });
    await rig.until(effectId, (v) => v.finalMoney.disputes.some((d) => d.id === dispute.id && d.status === 'won'));
    await rig.sandbox.control.idle();
    await rig.drained();
    await expect.poll(async () => (await rig.stores.alerts.get(alertId))?.resolvedAt, { timeout: 5_000 }).toBeNull();
    const after = await rig.stores.alerts.get(alertId);
    expect(after?.action).toMatch(/refund again under a new approval/i);
    expect(after?.centsAtStake).toBe(2_000);
  });

  it('opens the exposure again when the chargeback answered with the refund is lost: the merchant paid twice', async () => {
    const { effectId, alertId, disputeId } = await exposedRefund();
    expect((await rig.stores.alerts.get(alertId))?.action).toMatch(/Reply to dispute/);
    // Replied with the refund as evidence, and resolved it.
    expect(await rig.stores.alerts.resolve(alertId, 'alice')).toMatchObject({ resolved: true });
    await chargebackLost(effectId, disputeId);
    await expect.poll(async () => (await rig.stores.alerts.get(alertId))?.resolvedAt, { timeout: 5_000 }).toBeNull();
    expect((await rig.stores.alerts.get(alertId))?.action).toMatch(/was lost: the merchant paid both/);
  });

  it('keeps that exposure open through the exposure repair when the person resolved it as a person does (alert and inbox item): the closed item is not the other half of the reopened alert', async () => {
    const { effectId, alertId, disputeId } = await exposedRefund();
    await resolveAlert(rig.stores, alertId, { name: 'alice', role: 'support' });
    await chargebackLost(effectId, disputeId);
    await expect.poll(async () => (await rig.stores.alerts.get(alertId))?.resolvedAt, { timeout: 5_000 }).toBeNull();
    // Each reconciliation pass runs the repair: it must not take the item alice closed before the loss for this alert's.
    expect((await repairExposures(rig.stores)).resolvedAlerts).not.toContain(alertId);
    expect(await rig.stores.alerts.get(alertId)).toMatchObject({ resolvedAt: null, resolvedBy: null });
  });

  it('stays resolved when the person resolved it after the chargeback was lost: a further read of the facts adds nothing', async () => {
    const { effectId, alertId, disputeId } = await exposedRefund();
    await chargebackLost(effectId, disputeId);
    await expect.poll(async () => (await rig.stores.alerts.get(alertId))?.action, { timeout: 5_000 }).toMatch(/was lost/);
    await rig.stores.alerts.resolve(alertId, 'alice');
    await rig.facts.reread(effectId);
    expect((await rig.stores.alerts.get(alertId))?.resolvedBy).toBe('alice');
  });
});
