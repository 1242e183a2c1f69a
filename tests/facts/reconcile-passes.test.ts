// Reconciliation passes bounded in size still cover every committed effect: the scheduled reconciler goes on each
// pass from where the last one stopped (a horizon with more committed effects than one pass re-reads is covered in
// turn, not only its oldest), and `interlock reconcile` (reconcileAll) runs passes until it has read them all. One
// effect whose re-read keeps failing is passed over and counted, never holding back the ones after it; re-reads
// failing several in a row (the source down) stop a pass, and the next starts where it did; Redis going away fails it.
import { afterEach, describe, expect, it } from 'vitest';
import { reconcileAll, startReconciler } from '../../queues/facts.js';
import { createFacts, type FactsApplier } from '../../src/interlock.js';
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

  it('an effect whose re-read keeps failing is passed over, counted and read again when the passes come round', async () => {
    const { node, facts } = await fiveCommitted();
    const order = (await node.journal.watched(0, 10, null)).effectIds;
    const poison = order[1] as string;
    const tried: string[] = [];
    const failing: FactsApplier = { ...facts, reread: async (effectId) => {
      tried.push(effectId);
      if (effectId === poison) throw new Error(`No such payment_intent for ${effectId.slice(0, 8)}`);
      return facts.reread(effectId);
    } };
    const reconciler = startReconciler(node.stores, failing, { intervalMs: 3_600_000, horizonMs: 3_600_000, limit: 2, atStart: false });
    try {
      const reports = [];
      for (let pass = 0; pass < 4; pass += 1) reports.push(await reconciler.pass());
      expect(reports.map((report) => [report.effects, report.unread, report.stopped])).toEqual([[1, 1, null], [2, 0, null], [1, 0, null], [1, 1, null]]);
      expect(reports[0]?.failures).toEqual([{ effectId: poison, error: expect.stringContaining('No such payment_intent') }]);
      // Every effect after the failing one was read, and the failing one again once the passes came round.
      expect(tried).toEqual([...order, ...order.slice(0, 2)]);
    } finally {
      await reconciler.close();
    }
    const since = (await node.journal.serverTime()) - 3_600_000;
    expect(await reconcileAll(node.stores, failing, since, { limit: 2 })).toMatchObject({ effects: 4, unread: 1, stopped: null });
  });

  it('re-reads failing five in a row stop the pass, and the next pass starts where it did', async () => {
    const { node, facts } = await fiveCommitted();
    let down = true;
    const tried: string[] = [];
    const flaky: FactsApplier = { ...facts, reread: async (effectId) => {
      tried.push(effectId);
      if (down) throw new Error('connect ETIMEDOUT api.stripe.com');
      return facts.reread(effectId);
    } };
    const reconciler = startReconciler(node.stores, flaky, { intervalMs: 3_600_000, horizonMs: 3_600_000, atStart: false });
    try {
      const stopped = await reconciler.pass();
      expect(stopped).toMatchObject({ effects: 0, unread: 5, stopped: expect.stringContaining('ETIMEDOUT') });
      down = false;
      expect(await reconciler.pass()).toMatchObject({ effects: 5, unread: 0, stopped: null });
      expect(tried.slice(5)).toEqual(tried.slice(0, 5));
    } finally {
      await reconciler.close();
    }
    down = true;
    const since = (await node.journal.serverTime()) - 3_600_000;
    expect(await reconcileAll(node.stores, flaky, since, { limit: 2 })).toMatchObject({ effects: 0, unread: 5, stopped: expect.stringContaining('the pass stopped') });
  });

  it('Redis going away fails the pass instead of passing over every effect', async () => {
    const { node, facts } = await fiveCommitted();
    const outage = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
    const cut: FactsApplier = { ...facts, reread: async () => {
      throw outage;
    } };
    const since = (await node.journal.serverTime()) - 3_600_000;
    await expect(reconcileAll(node.stores, cut, since)).rejects.toBe(outage);
  });
});
