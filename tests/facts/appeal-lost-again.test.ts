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

/**
 * A committed refund whose payment has one dispute at Stripe (`stripe.set` moves it), read by a facts applier whose
 * Stripe reads can be held after reading (`stripe.holdReads`: a slow job); `event(n)` is its n-th event.
 */
async function disputedRefund() {
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
  const stripe = {
    set: (status: string) => (dispute = { ...dispute, status }),
    /** Holds the next read once it has read, until the returned release is called. */
    holdNextRead(): () => void {
      let release: () => void = () => undefined;
      hold = new Promise<void>((resolve) => (release = resolve));
      return () => release();
    },
    readsFlow: () => (hold = null),
  };
  const event = (n: number): StripeEvent => ({ id: `evt_${n}`, type: 'charge.dispute.updated', data: { object: { id: 'dp_1', object: 'dispute', status: dispute.status, amount: 10_000, charge: 'ch_1', payment_intent: 'pi_1' } } });
  const receipt = async () => verify(JSON.parse(JSON.stringify(await node.journal.receipt(answer.effectId))), { publicKeys: world.key.publicKeys });
  const statusNow = async () => (await receipt()).finalMoney.disputes.map((d) => d.status);
  const entries = async () => (await node.journal.receipt(answer.effectId))?.entries.length;
  return { facts, stripe, event, receipt, statusNow, entries, effectId: answer.effectId };
}

describe('a chargeback lost, appealed, and lost again', () => {
  it('ends with the dispute lost on the receipt, not stuck in appeal', async () => {
    const { facts, stripe, event, statusNow, entries } = await disputedRefund();
    let n = 0;
    for (const status of ['needs_response', 'lost', 'appeal_under_review', 'lost']) {
      stripe.set(status);
      await facts.applyEvent(event((n += 1)));
      expect(await statusNow()).toEqual([status]);
    }
    const recorded = await entries();
    await facts.applyEvent(event(n));
    await facts.applyEvent(event(n + 1));
    expect(await entries()).toBe(recorded);
  });

  it('a read of the first loss that a slow job appends after the appeal was won does not turn it back to lost', async () => {
    const { facts, stripe, event, receipt, statusNow, effectId } = await disputedRefund();
    await facts.applyEvent(event(1));
    stripe.set('lost');
    await facts.applyEvent(event(2));
    expect(await statusNow()).toEqual(['lost']);
    // The reconciler re-reads the effect while the dispute is still lost, and is slow to append.
    const release = stripe.holdNextRead();
    const slow = facts.reread(effectId);
    await new Promise((resolve) => setTimeout(resolve, 50));
    stripe.readsFlow();
    // Meanwhile the merchant appeals and wins; those events are recorded.
    stripe.set('appeal_under_review');
    await facts.applyEvent(event(3));
    stripe.set('won');
    await facts.applyEvent(event(4));
    expect({ disputes: await statusNow(), exposure: (await receipt()).exposure }).toEqual({ disputes: ['won'], exposure: null });
    release();
    await slow;
    expect({ disputes: await statusNow(), exposure: (await receipt()).exposure }).toEqual({ disputes: ['won'], exposure: null });
  });

  it('an appeal whose fact is appended after its end, recorded meanwhile by a faster job, still reads won', async () => {
    const { facts, stripe, event, receipt, statusNow } = await disputedRefund();
    await facts.applyEvent(event(1));
    stripe.set('lost');
    await facts.applyEvent(event(2));
    expect(await statusNow()).toEqual(['lost']);
    // The merchant appeals: that event's job reads Stripe (appeal_under_review) and is slow to append.
    stripe.set('appeal_under_review');
    const release = stripe.holdNextRead();
    const slow = facts.applyEvent(event(3));
    await new Promise((resolve) => setTimeout(resolve, 50));
    stripe.readsFlow();
    // The appeal is won; that event's job runs at once and reads `won` (its chain holds no appeal yet).
    stripe.set('won');
    await facts.applyEvent(event(4));
    release();
    await slow;
    // Every event was delivered and applied; Stripe says won.
    expect({ disputes: await statusNow(), exposure: (await receipt()).exposure?.cents ?? null }).toEqual({ disputes: ['won'], exposure: null });
  });
});
