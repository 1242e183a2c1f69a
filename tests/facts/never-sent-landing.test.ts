// RULE: a metadata match makes a refund an effect's own, and a landing is recorded, only for an effect that was ever
// sent (a DISPATCHED on its chain, a fencing epoch above 0). An effect the gate refused before any send
// (REFUSED:stale_premise) cannot have landed: a refund a person makes by hand on the same payment, for the same
// amount, with the effect id pasted into its metadata for traceability, is not the effect's landing. Recorded as
// one, the receipt said the send happened and a late_landing alert said "treat it as sent".
// (metadata-is-a-lead.test.ts covers another payment and another amount.)
import { describe, expect, it } from 'vitest';
import { approvalTerms } from '../support/harness.js';
import { pay, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

describe('facts: a refund labelled with the id of an effect refused before any send', () => {
  it('is not recorded as that effect landing: its receipt still says nothing was sent', async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 3_000 });
    await rig.stores.approvals.grant(terms);
    const recorded = await rig.effects.propose({ requestId: `case-never-sent-${paymentIntent}`, agent: 'support-bot', approval: terms.id, premises: { chargebacks: [], refunded_by_others: 500 }, effect: { kind: 'refund', paymentIntent, amount: 3_000, reason: 'requested_by_customer' } });
    expect(await rig.effects.waitFor(recorded.effectId, 15_000)).toMatchObject({ outcome: 'REFUSED:stale_premise' });
    const before = await rig.receipt(recorded.effectId);
    expect(before.happened).toBe(false);
    expect((await rig.stores.journal.receipt(recorded.effectId))?.entries.some((entry) => entry.kind === 'DISPATCHED')).toBe(false);
    // Support refunds the $30 by hand and notes the effect id on it.
    await rig.stripe.refunds.create({ payment_intent: paymentIntent, amount: 3_000, metadata: { interlock_effect_id: recorded.effectId } });
    await rig.sandbox.control.idle();
    await rig.drained();
    const after = await rig.receipt(recorded.effectId);
    expect(after).toMatchObject({ happened: false, lateLanding: null, finalMoney: { status: 'not_returned' } });
    const alerts = (await rig.stores.alerts.list()).filter((alert) => alert.effectId === recorded.effectId).map((alert) => alert.kind);
    expect(alerts).not.toContain('late_landing');
  });
});
