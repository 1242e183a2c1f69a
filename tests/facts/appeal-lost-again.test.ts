// Rule: a chargeback lost, appealed and lost again reads `lost` on the receipt (final-money.ts: an appeal ends won or
// lost again, and the newest stands). The second `lost` said what the first said, so it was taken for the same fact
// (src/facts/apply.ts, fingerprint) and dropped: the receipt read "under appeal" for good. A redelivery of the appeal's
// end still records nothing more. A slow job's read of the first loss, appended after the appeal was won, is that
// first loss (the chain held no appeal when it read), not the appeal's end: it must not turn `won` back to `lost`. And
// an appeal status appended after its end (a slow job; the end recorded meanwhile as a plain won) is read once more, so
// the end stands after it: the receipt read "under appeal", with an exposure Stripe did not have.
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createFacts, type DisputeFact, type StripeEvent, type StripeReader } from '../../src/interlock.js';
import { verify } from '../../src/core/verify.js';
import { refundProposal, type World } from '../support/harness.js';
import { gateWorld, grant } from '../gate/gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

describe('a chargeback lost, appealed, and lost again', () => {
  it('ends with the dispute lost on the receipt, not stuck in appeal', async () => {
    world = await gateWorld({ config: { keyPrefix: `rvfacts${randomBytes(5).toString('hex')}` } });
    const node = await world.node('a');
    const { id } = await grant(node);
    const answer = await node.gate.submit(refundProposal({ approval: id }));
    expect(answer.outcome).toBe('COMMITTED');
    let dispute: DisputeFact = { id: 'dp_1', status: 'needs_response', amount: 10_000, charge: 'ch_1', paymentIntent: 'pi_1', reason: 'fraudulent', created: 1 };
    const reader: StripeReader = { refund: async () => null, refundsOf: async () => [], disputesOf: async () => [dispute], creditsOf: async () => [] };
    const facts = createFacts(node.stores, reader);
    const event = (n: number): StripeEvent => ({ id: `evt_${n}`, type: 'charge.dispute.updated', data: { object: { id: 'dp_1', object: 'dispute', status: dispute.status, amount: 10_000, charge: 'ch_1', payment_intent: 'pi_1' } } });
    const statusNow = async () => {
      const receipt = await node.journal.receipt(answer.effectId);
      return verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: world.key.publicKeys }).finalMoney.disputes.map((d) => d.status);
    };
    let n = 0;
    for (const status of ['needs_response', 'lost', 'appeal_under_review', 'lost']) {
      dispute = { ...dispute, status };
      await facts.applyEvent(event((n += 1)));
      expect(await statusNow()).toEqual([status]);
    }
    const recorded = (await node.journal.receipt(answer.effectId))?.entries.length;
    await facts.applyEvent(event(n));
    await facts.applyEvent(event(n + 1));
    expect((await node.journal.receipt(answer.effectId))?.entries.length).toBe(recorded);
  });

  it('a read of the first loss that a slow job appends after the appeal was won does not turn it back to lost', async () => {
    world = await gateWorld({ config: { keyPrefix: `rvfacts${randomBytes(5).toString('hex')}` } });
    const node = await world.node('a');
    const { id } = await grant(node);
    const answer = await node.gate.submit(refundProposal({ approval: id }));
    expect(answer.outcome).toBe('COMMITTED');
    let dispute: DisputeFact = { id: 'dp_1', status: 'needs_response', amount: 10_000, charge: 'ch_1', paymentIntent: 'pi_1', reason: 'fraudulent', created: 1 };
    let hold: Promise<void> | null = null;
    const reader: StripeReader = {
      refund: async () => null,
      refundsOf: async () => [],
      disputesOf: async () => {
        const seen = dispute; // what Stripe says at the moment of the read
        if (hold) await hold; // ... and the job that read it is slow to append
        return [seen];
      },
      creditsOf: async () => [],
    };
    const facts = createFacts(node.stores, reader);
    const event = (n: number): StripeEvent => ({ id: `evt_${n}`, type: 'charge.dispute.updated', data: { object: { id: 'dp_1', object: 'dispute', status: dispute.status, amount: 10_000, charge: 'ch_1', payment_intent: 'pi_1' } } });
    const statusNow = async () => {
      const receipt = await node.journal.receipt(answer.effectId);
      return verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: world.key.publicKeys });
    };

    await facts.applyEvent(event(1));
    dispute = { ...dispute, status: 'lost' };
    await facts.applyEvent(event(2));
    expect((await statusNow()).finalMoney.disputes.map((d) => d.status)).toEqual(['lost']);

    // The reconciler re-reads the effect while the dispute is still lost, and is slow to append.
    let release!: () => void;
    hold = new Promise<void>((resolve) => (release = resolve));
    const slow = facts.reread(answer.effectId);
    await new Promise((resolve) => setTimeout(resolve, 50));
    hold = null;

    // Meanwhile the merchant appeals and wins; those events are recorded.
    dispute = { ...dispute, status: 'appeal_under_review' };
    await facts.applyEvent(event(3));
    dispute = { ...dispute, status: 'won' };
    await facts.applyEvent(event(4));
    const before = await statusNow();
    expect(before.finalMoney.disputes.map((d) => d.status)).toEqual(['won']);
    expect(before.exposure).toBeNull();

    release();
    await slow;
    const after = await statusNow();
    expect(after.finalMoney.disputes.map((d) => d.status)).toEqual(['won']);
    expect(after.exposure).toBeNull();
  });

  it('an appeal whose fact is appended after its end, recorded meanwhile by a faster job, still reads won', async () => {
    world = await gateWorld({ config: { keyPrefix: `rvfacts${randomBytes(5).toString('hex')}` } });
    const node = await world.node('a');
    const { id } = await grant(node);
    const answer = await node.gate.submit(refundProposal({ approval: id }));
    expect(answer.outcome).toBe('COMMITTED');
    let dispute: DisputeFact = { id: 'dp_1', status: 'needs_response', amount: 10_000, charge: 'ch_1', paymentIntent: 'pi_1', reason: 'fraudulent', created: 1 };
    let hold: Promise<void> | null = null;
    const reader: StripeReader = {
      refund: async () => null,
      refundsOf: async () => [],
      disputesOf: async () => {
        const seen = dispute;
        if (hold) await hold;
        return [seen];
      },
      creditsOf: async () => [],
    };
    const facts = createFacts(node.stores, reader);
    const event = (n: number): StripeEvent => ({ id: `evt_${n}`, type: 'charge.dispute.updated', data: { object: { id: 'dp_1', object: 'dispute', status: dispute.status, amount: 10_000, charge: 'ch_1', payment_intent: 'pi_1' } } });
    const statusNow = async () => verify(JSON.parse(JSON.stringify(await node.journal.receipt(answer.effectId))), { publicKeys: world.key.publicKeys });

    await facts.applyEvent(event(1));
    dispute = { ...dispute, status: 'lost' };
    await facts.applyEvent(event(2));
    expect((await statusNow()).finalMoney.disputes.map((d) => d.status)).toEqual(['lost']);

    // The merchant appeals: that event's job reads Stripe (appeal_under_review) and is slow to append.
    dispute = { ...dispute, status: 'appeal_under_review' };
    let release!: () => void;
    hold = new Promise<void>((resolve) => (release = resolve));
    const slow = facts.applyEvent(event(3));
    await new Promise((resolve) => setTimeout(resolve, 50));
    hold = null;

    // The appeal is won; that event's job runs at once and reads `won` (its chain holds no appeal yet).
    dispute = { ...dispute, status: 'won' };
    await facts.applyEvent(event(4));
    release();
    await slow;
    // Every event was delivered and applied; Stripe says won.
    const after = await statusNow();
    expect({ disputes: after.finalMoney.disputes.map((d) => d.status), exposure: after.exposure?.cents ?? null }).toEqual({ disputes: ['won'], exposure: null });
  });
});
