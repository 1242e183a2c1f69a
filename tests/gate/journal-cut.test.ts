// A receipt is signed only over a chain that agrees with its effect's state. Every append writes the chain and the
// state (head, count) in one script, so a chain that is shorter than the state counts, or that ends elsewhere than the
// head, was cut or altered in Redis: signing a head over it would make verify() call valid a receipt that hides its
// end (the COMMITTED, a refund's failure, a dispute). The export refuses instead, naming the effect.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verify } from '../../src/core/verify.js';
import { refundProposal, worldWithNode } from '../support/harness.js';

let rig: Awaited<ReturnType<typeof worldWithNode>>;

beforeAll(async () => {
  rig = await worldWithNode();
  rig.world.target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  await rig.node.approvals.grant({ id: 'ap_cut', approver: 'dana@support', capCents: 50_000, expiresAt: Date.now() + 3_600_000, maxUses: 10, scope: 'payment:pi_1' });
});
afterAll(() => rig.close());

/** A committed effect, and where its chain lies in Redis. */
async function committed(requestId: string): Promise<{ effectId: string; entriesKey: string }> {
  const done = await rig.node.gate.submit(refundProposal({ requestId, approval: 'ap_cut', amount: 100 }));
  expect(done.outcome).toBe('COMMITTED');
  const partition = await rig.redis.hget(rig.node.journal.keys.effectPartitions, done.effectId);
  return { effectId: done.effectId, entriesKey: rig.node.journal.keys.entries(partition ?? '', done.effectId) };
}

async function cutLastEntry(entriesKey: string): Promise<void> {
  const lines = (await rig.redis.get(entriesKey))?.split('\n') ?? [];
  await rig.redis.set(entriesKey, lines.slice(0, -1).join('\n'));
}

describe('a chain cut in Redis', () => {
  it('is exported as it stands while whole, and verifies', async () => {
    const { effectId } = await committed('case-cut-whole');
    const receipt = await rig.node.journal.receipt(effectId);
    expect(verify(receipt, { publicKeys: rig.world.key.publicKeys })).toMatchObject({ valid: true, outcome: 'COMMITTED' });
  });

  it('without its COMMITTED: no receipt is signed, alone or among others, and the error names the effect', async () => {
    const whole = await committed('case-cut-other');
    const { effectId, entriesKey } = await committed('case-cut-tail');
    await cutLastEntry(entriesKey);
    const problem = { code: 'journal_inconsistent', message: expect.stringContaining(effectId) };
    await expect(rig.node.journal.receipt(effectId)).rejects.toMatchObject(problem);
    await expect(rig.node.journal.receipts([whole.effectId, effectId])).rejects.toMatchObject(problem);
    await expect(rig.node.gate.receipt(effectId)).rejects.toMatchObject(problem);
  });

  it('emptied altogether while its state counts entries: refused, not read as an effect with no journal', async () => {
    const { effectId, entriesKey } = await committed('case-cut-all');
    await rig.redis.set(entriesKey, '');
    await expect(rig.node.journal.receipt(effectId)).rejects.toMatchObject({ code: 'journal_inconsistent' });
  });
});
