// Rule: submitLatest (what an effects job runs) runs only the effect it is asked for, and only a proposal the journal
// holds for it. A copy of another effect, with nothing recorded under the job's, is refused as invalid_proposal naming
// both ids, and nothing is recorded or sent (before, the other effect was recorded and its refund sent). A copy of its
// own effect with nothing recorded is refused too: every producer records before it queues, so such a job was added by
// hand, and the edge's checks (four eyes, the caller's token, the premises read) never ran on it
// (tests/queues/unrecorded-job-refused).
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryTarget, effectIdFor, openStores, startSender, type MemoryTarget, type Sender, type Stores } from '../../src/interlock.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig, testKey } from '../support/harness.js';

const keyPair = testKey();
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

async function rig(): Promise<{ stores: Stores; sender: Sender; target: MemoryTarget; approval: string }> {
  const config = testConfig();
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key });
  const sender = await startSender(stores, target);
  closers.push(async () => {
    await sender.close();
    await stores.close();
    await removePrefixes([config.keyPrefix]);
  });
  const terms = approvalTerms();
  await stores.approvals.grant(terms);
  return { stores, sender, target, approval: terms.id };
}

describe('submitLatest runs only its own effect', () => {
  it('refuses a carried proposal of another effect when none of its own is recorded, naming both ids; nothing recorded or sent', async () => {
    const { stores, sender, target, approval } = await rig();
    const carried = refundProposal({ approval, amount: 700 });
    const carriedEffect = effectIdFor({ requestId: carried.requestId, effect: carried.effect });
    const asked = 'f'.repeat(64);
    const refused = await sender.gate.submitLatest(asked, carried).then(
      () => null,
      (error: unknown) => error as { code?: string; message: string },
    );
    expect(refused?.code).toBe('invalid_proposal');
    expect(refused?.message).toContain(asked);
    expect(refused?.message).toContain(carriedEffect);
    expect(target.landings).toHaveLength(0);
    expect([await stores.journal.partitionOf(asked), await stores.journal.partitionOf(carriedEffect)]).toEqual([null, null]);
  });

  it('refuses the carried proposal of its own effect when the journal holds none; nothing recorded or sent', async () => {
    const { stores, sender, target, approval } = await rig();
    const carried = refundProposal({ approval, amount: 800 });
    const effectId = effectIdFor({ requestId: carried.requestId, effect: carried.effect });
    const refused = await sender.gate.submitLatest(effectId, carried).then(
      () => null,
      (error: unknown) => error as { code?: string; message: string },
    );
    expect(refused?.code).toBe('invalid_proposal');
    expect(refused?.message).toContain(`carries a proposal no producer recorded, and no proposal of ${effectId} is recorded`);
    expect(target.landings).toHaveLength(0);
    expect(await stores.journal.receipt(effectId)).toBeNull();
  });

  it('runs the recorded proposal once it is recorded', async () => {
    const { sender, target, approval } = await rig();
    const carried = refundProposal({ approval, amount: 800 });
    const effectId = effectIdFor({ requestId: carried.requestId, effect: carried.effect });
    expect((await sender.gate.submit(carried)).outcome).toBe('COMMITTED');
    expect((await sender.gate.submitLatest(effectId, carried)).answer.outcome).toBe('DUPLICATE_IGNORED');
    expect(target.landings).toHaveLength(1);
  });
});
