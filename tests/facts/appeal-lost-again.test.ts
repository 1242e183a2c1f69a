// Rule: a chargeback lost, appealed and lost again reads `lost` on the receipt (final-money.ts: an appeal ends won or
// lost again, and the newest stands). The second `lost` said what the first said, so it was taken for the same fact
// (src/facts/apply.ts, fingerprint) and dropped: the receipt read "under appeal" for good. A redelivery of the appeal's
// end still records nothing more.
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
});
