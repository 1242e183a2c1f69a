// Rule: a dispatch none of whose requests ever left a worker is never settled AMBIGUOUS, even on a target that can
// neither dedupe nor be looked up (tier 3): nothing can have landed. A send held back because too few Redis
// replicas acknowledged the DISPATCHED (INTERLOCK_REDIS_MIN_REPLICAS) gives its claim up saying so; a recoverer
// that only waits, looks or is held back too keeps saying so; the recoverer that may send then sends it once
// (REAPPLIED_AFTER_QUERY), or refuses it if its approval or premises no longer hold. A dispatch whose send may have
// left (a crash mid-send) is AMBIGUOUS on such a target, as before (release-claim-1.lua, take-over-1.lua,
// planRecovery).
import { afterEach, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { refundProposal, startNode, type TestNode, type World } from '../support/harness.js';
import { entryKinds, gateWorld, grant, submitAndCrash } from './gate-support.js';

let world: World;
let extra: TestNode | null = null;
afterEach(async () => {
  await extra?.close();
  extra = null;
  await world.close();
});

/** The shared test Redis has no replicas, so WAIT 1 always answers 0: every send of these nodes is held back. */
const REPLICAS_BEHIND = { redisMinReplicas: 1, redisWaitMs: 50 } as Partial<Config>;

it('a tier-3 send held back for lagging replicas is sent by recovery once it may be, never settled AMBIGUOUS', async () => {
  world = await gateWorld({ target: { tier: 3 }, config: REPLICAS_BEHIND });
  const a = await world.node('a');
  const { id } = await grant(a);
  const answer = await a.gate.submit(refundProposal({ approval: id }));
  expect(answer.outcome).toBe('IN_FLIGHT');
  expect(answer.reason).toMatch(/it was not sent; recovery sends it once they do/);
  expect(world.target.sendStarts).toHaveLength(0);

  // Recovery on the same lagging Redis is held back too, and says so: still nothing sent, nothing settled.
  const held = await a.gate.recover();
  expect(held.settled).toEqual([]);
  expect(held.unresolved).toEqual([expect.objectContaining({ effectId: answer.effectId, outcome: 'UNRESOLVED:replicas_behind' })]);
  expect(world.target.sendStarts).toHaveLength(0);

  // The replicas caught up (a worker that needs none): the next recoverer sends it, once.
  extra = await startNode({ config: { ...world.config, redisMinReplicas: 0 }, target: world.target, key: world.key.key, workerId: 'b' });
  const sent = await extra.gate.recover();
  expect(sent.settled).toEqual([expect.objectContaining({ effectId: answer.effectId, outcome: 'REAPPLIED_AFTER_QUERY' })]);
  expect(world.target.landedCount(answer.effectId)).toBe(1);
  expect(await entryKinds(a, answer.effectId)).not.toContain('AMBIGUOUS');
});

it('a tier-3 send that may have left (a crash mid-send) is still settled AMBIGUOUS', async () => {
  world = await gateWorld({ target: { tier: 3 } });
  const a = await world.node('a');
  const b = await world.node('b');
  const { id } = await grant(a);
  world.target.inject({ kind: 'crash-after-send' });
  const effectId = await submitAndCrash(a, refundProposal({ approval: id }));
  await a.close();
  const report = await b.gate.recover();
  expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'AMBIGUOUS' })]);
});
