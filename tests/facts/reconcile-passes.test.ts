// Reconciliation passes bounded in size still cover every committed effect: the scheduled reconciler goes on each
// pass from where the last one stopped (a horizon with more committed effects than one pass re-reads is covered in
// turn, not only its oldest), and `interlock reconcile` (reconcileAll) runs passes until it has read them all.
import { afterEach, describe, expect, it } from 'vitest';
import { reconcileAll, startReconciler } from '../../queues/facts.js';
import { createFacts } from '../../src/interlock.js';
import { refundProposal, type World } from '../support/harness.js';
import { gateWorld, grant } from '../gate/gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

async function fiveCommitted() {
  world = await gateWorld();
  const node = await world.node('a');
  const { id } = await grant(node, { maxUses: 10 });
  for (let index = 0; index < 5; index += 1) expect((await node.gate.submit(refundProposal({ approval: id, amount: 100 }))).outcome).toBe('COMMITTED');
  // No Stripe reader: a re-read appends nothing, and the passes' counts say what they read.
  return { node, facts: createFacts(node.stores, null) };
}

describe('reconciliation in passes', () => {
  it('the scheduled reconciler reads on from where its last pass stopped, then starts over', async () => {
    const { node, facts } = await fiveCommitted();
    const reconciler = startReconciler(node.stores, facts, { intervalMs: 3_600_000, horizonMs: 3_600_000, limit: 2, atStart: false });
    try {
      const counts: number[] = [];
      for (let pass = 0; pass < 4; pass += 1) counts.push((await reconciler.pass()).effects);
      expect(counts).toEqual([2, 2, 1, 2]);
    } finally {
      await reconciler.close();
    }
  });

  it('`interlock reconcile` runs passes until every committed effect was read', async () => {
    const { node, facts } = await fiveCommitted();
    const since = (await node.journal.serverTime()) - 3_600_000;
    expect(await reconcileAll(node.stores, facts, since, { limit: 2 })).toMatchObject({ effects: 5, appended: 0 });
  });
});
