// Rule: bad input never fails a job for good nor is recorded as fact. Without the re-read before recording (library
// mode: createFacts with rereadBeforeAppend: false), what a signed event's object says is recorded; a string in it with
// no canonical form (a lone surrogate, "x\ud800") failed the facts job for ever with non_canonical_value, the refund's
// failure lost, and a dispute amount no Stripe object has (-5, 1.5) was recorded, the receipt saying "charged back
// (-$0.05)". Now words a person reads keep each lone surrogate as U+FFFD, a name (id, status) with one is taken as
// absent, and an amount is taken only as a whole number of minor units from 0 up (else as if absent).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StripeEvent } from '../../src/interlock.js';
import { startFactsRig, type FactsRig } from './facts-rig.js';

let rig: FactsRig;
beforeAll(async () => {
  rig = await startFactsRig({ reread: false });
}, 60_000);
afterAll(async () => {
  await rig?.close();
});

let sent = 0;
const eventOf = (type: string, object: Record<string, unknown>): StripeEvent => ({ id: `evt_asstated${Date.now()}${(sent += 1)}`, type, created: Math.floor(Date.now() / 1000), data: { object } });

describe('an event whose object holds what no Stripe object does, recorded without a re-read', () => {
  it('a refund.failed whose failure_reason holds a lone surrogate records the failure, the surrogate as U+FFFD', async () => {
    const { effectId, refund } = await rig.committedRefund();
    const object = { ...(JSON.parse(JSON.stringify(refund)) as Record<string, unknown>), status: 'failed', failure_reason: 'expired_or_canceled_card\ud800' };
    const applied = await rig.facts.applyEvent(eventOf('refund.failed', object));
    expect(applied.find((one) => one.effectId === effectId)?.appended).toBeGreaterThan(0);
    const entries = (await rig.stores.journal.receipt(effectId))?.entries ?? [];
    const failure = entries.find((entry) => entry.kind === 'OBSERVED' && entry.objectId === refund.id && entry.status === 'failed');
    expect(failure).toMatchObject({ failureReason: 'expired_or_canceled_card\ufffd' });
    const verification = await rig.receipt(effectId);
    expect({ valid: verification.valid, status: verification.finalMoney.status }).toEqual({ valid: true, status: 'not_returned' });
  }, 60_000);

  for (const amount of [-5, 1.5]) {
    it(`a dispute of amount ${amount} is recorded as one of no stated amount, never as that amount`, async () => {
      const { effectId, refund, paymentIntent } = await rig.committedRefund();
      const dispute = { id: `dp_asstated${Date.now()}${(sent += 1)}`, object: 'dispute', status: 'needs_response', reason: 'fraudulent', amount, charge: refund.charge, payment_intent: paymentIntent, created: Math.floor(Date.now() / 1000) };
      await rig.facts.applyEvent(eventOf('charge.dispute.created', dispute));
      const verification = await rig.receipt(effectId);
      expect(verification.valid).toBe(true);
      expect(verification.finalMoney.disputes.map((one) => [one.id, one.amount])).toEqual([[dispute.id, 0]]);
      expect(verification.exposure?.sentence ?? '').not.toMatch(/-\$|\$0\.01/);
    }, 60_000);
  }

  it('a dispute whose reason holds a lone surrogate is recorded with its amount, the surrogate as U+FFFD', async () => {
    const { effectId, refund, paymentIntent } = await rig.committedRefund();
    const dispute = { id: `dp_asstated${Date.now()}${(sent += 1)}`, object: 'dispute', status: 'needs_response', reason: 'fraudulent\udc00', amount: 10_000, charge: refund.charge, payment_intent: paymentIntent, created: Math.floor(Date.now() / 1000) };
    await rig.facts.applyEvent(eventOf('charge.dispute.created', dispute));
    const entries = (await rig.stores.journal.receipt(effectId))?.entries ?? [];
    expect(entries.find((entry) => entry.kind === 'OBSERVED' && entry.objectId === dispute.id)).toMatchObject({ amount: 10_000, disputeReason: 'fraudulent\ufffd' });
    expect((await rig.receipt(effectId)).finalMoney.disputes.map((one) => [one.id, one.amount])).toEqual([[dispute.id, 10_000]]);
  }, 60_000);
});
