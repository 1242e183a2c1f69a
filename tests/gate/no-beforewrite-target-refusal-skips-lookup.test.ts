// Rule: a definite refusal settles an effect only after a lookup shows none of its money moved, unless the gate KNOWS
// nothing left; a target that sends without calling SendContext.beforeWrite (the port does not say it must, and the
// gate cannot tell "refused before the network" from "never reported leaving") must not have its refusal of a first
// dispatch settled REFUSED without that lookup while its request landed (receipt says no money moved; it did).
// Setup: a queryable tier-2 target (no dedupe) (an embedder's, wrapping the memory target) whose apply sends without the gate's
// beforeWrite, the request lands, and its own internal retry is refused as a duplicate (Rejected). Before f96d84a the
// gate looked up after a refusal and committed the landing (COMMITTED_ON_QUERY); now `left` stays false, so the first
// dispatch's refusal is settled without a lookup.
import { afterEach, expect, it } from 'vitest';
import { Rejected, type Target } from '../../src/core/target.js';
import { refundProposal, startNode, type TestNode, type World } from '../support/harness.js';
import { gateWorld, grant } from './gate-support.js';

let world: World;
const nodes: TestNode[] = [];
afterEach(async () => {
  for (const node of nodes.splice(0)) await node.close().catch(() => undefined);
  await world.close();
});

it("a first dispatch whose target landed the refund without calling beforeWrite, then threw Rejected, is not settled as refused with the money moved", async () => {
  world = await gateWorld({ target: { tier: 2 } });
  const inner = world.target;
  const target: Target = {
    ...inner,
    async apply(effectId, effect, context) {
      // The embedder's client writes without the gate's fencing hook (it never calls context.beforeWrite) ...
      await inner.apply(effectId, effect, { ...context, timeLeftMs: () => context.timeLeftMs(), beforeWrite: async () => undefined });
      // ... the answer is lost, its own retry is refused as a duplicate of the request that just landed.
      throw new Rejected('duplicate request: an object for this key already exists', { code: 'duplicate', status: 400 });
    },
  };
  const node = await startNode({ config: world.config, target, key: world.key.key, workerId: 'g4a' });
  nodes.push(node);
  const { id } = await grant(node);
  const answer = await node.gate.submit(refundProposal({ approval: id }));
  // The money moved at the target:
  expect(inner.landings.filter((landing) => landing.effectId === answer.effectId)).toHaveLength(1);
  // So the receipt must not say the effect was refused (nothing moved).
  expect(answer.outcome).toBe('COMMITTED_ON_QUERY');
});
