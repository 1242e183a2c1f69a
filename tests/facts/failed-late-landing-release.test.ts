// Rule: a late landing is charged to the approval its send went under (late-5.lua), which need not be the approval of
// the effect's last dispatch (the request refused and decided again under another). When Stripe then fails that
// refund, its cents go back to the approval the landing was charged to and to the subject's total, once: never to the
// other approval, which the refusal had given back already, and never twice however often the failure is read. The
// approval is read from the chain (the dispatch of the landing's epoch), as every version wrote it: the state's
// approvalId names the last dispatch's. And a total holding less than the amount (counted by an older version) is
// brought to zero, never below: a negative total would leave an approval more room than its cap.
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createFacts, type RefundFact, type StripeEvent, type StripeReader } from '../../src/interlock.js';
import { refundProposal, type World } from '../support/harness.js';
import { PAYMENT, gateWorld, grant, refusedUnderTwoApprovals } from '../gate/gate-support.js';

let world: World;
afterEach(async () => {
  await world?.close();
});

/** Stripe as the facts re-read it: the one refund, failed. */
function failedRefund(effectId: string, id = 're_late'): StripeReader {
  const refund: RefundFact = { id, status: 'failed', amount: 2_000, charge: 'ch_1', paymentIntent: 'pi_1', failureReason: 'expired_or_canceled_card', effectId, created: 1 };
  return {
    refund: async (id) => (id === refund.id ? refund : null),
    refundsOf: async (paymentIntent) => (paymentIntent === refund.paymentIntent ? [refund] : []),
    disputesOf: async () => [],
    creditsOf: async () => [],
  };
}

const refundFailed = (id: string, refund = 're_late'): StripeEvent => ({ id, type: 'refund.failed', data: { object: { id: refund, object: 'refund' } } });

describe('a late landing charged to another approval than the last dispatch, whose refund then fails', () => {
  it('gives its cents back to the approval the landing was charged to and to the subject, once', async () => {
    world = await gateWorld();
    // Dispatched under ap1, its sender frozen, refused at recovery once ap1 is revoked; decided again under ap2,
    // refused the same way. The effect's state names ap2.
    const { b, ap1, ap2, effectId } = await refusedUnderTwoApprovals(world, 'case-failed-late');
    // ap1's frozen sender reports its landing: charged to ap1 and the subject.
    await b.journal.late(PAYMENT, effectId, { kind: 'LATE_RESULT', owner: 'a', epoch: 1, outcome: 'landed', result: { id: 're_late', object: 'refund', status: 'succeeded', amount: 2_000 }, error: null }, ap1.id);
    const held = async () => ({
      moved: (await b.approvals.subjectCap(PAYMENT)).movedCents,
      ap1: (await b.approvals.describe(ap1.id)).snapshot?.reservedCents,
      ap2: (await b.approvals.describe(ap2.id)).snapshot?.reservedCents,
    });
    expect(await held()).toEqual({ moved: 2_000, ap1: 2_000, ap2: 0 });

    // Stripe fails the refund; its event comes twice at once, then a re-read.
    const facts = createFacts(b.stores, failedRefund(effectId));
    await Promise.all([facts.applyEvent(refundFailed('evt_1')), facts.applyEvent(refundFailed('evt_1'), { again: true })]);
    await facts.reread(effectId);
    expect(await held()).toEqual({ moved: 0, ap1: 0, ap2: 0 });
    expect((await b.approvals.describe(ap1.id)).snapshot?.uses).toBe(1);
  });

  it('brings a total that holds less than the amount to zero, never below', async () => {
    world = await gateWorld();
    const b = await world.node('b');
    const ap = await grant(b, { capCents: 5_000, maxUses: 5 });
    await b.approvals.setSubjectCap(PAYMENT, 5_000);
    const settled = await b.gate.submit(refundProposal({ requestId: 'case-failed-short', approval: ap.id, amount: 2_000 }));
    expect(settled.outcome).toBe('COMMITTED');
    const committed = (await b.journal.receipt(settled.effectId))?.entries.find((entry) => entry.kind === 'COMMITTED');
    const refund = String((committed?.kind === 'COMMITTED' ? (committed.result as { id?: unknown }).id : undefined) ?? '');
    expect(refund).not.toBe('');
    // Totals an older version left short of the amount.
    const redis = new Redis(world.config.redisUrl);
    try {
      await redis.hset(b.journal.keys.subject(PAYMENT), 'movedCents', '500');
      await redis.hset(b.journal.keys.approval(PAYMENT, ap.id), 'reservedCents', '700');
    } finally {
      redis.disconnect();
    }
    await createFacts(b.stores, failedRefund(settled.effectId, refund)).applyEvent(refundFailed('evt_short', refund));
    expect({ moved: (await b.approvals.subjectCap(PAYMENT)).movedCents, reserved: (await b.approvals.describe(ap.id)).snapshot?.reservedCents }).toEqual({ moved: 0, reserved: 0 });
  });
});
