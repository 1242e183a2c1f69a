// Rule: a recoverer refused the send by its own guard (superseded under its worker id, or Redis not durable) gives the
// claim up saying nothing left (release-claim-1 `unsent`), so a tier-3 dispatch none of whose requests ever left is
// still sent once by the worker that takes it over, never settled AMBIGUOUS (a superseded process's recovery loop goes
// on taking claims).
import { afterEach, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { refundProposal, sleep, startNode, type TestNode, type World } from '../support/harness.js';
import { entryKinds, gateWorld, grant } from './gate-support.js';

let world: World;
let fresh: TestNode | null = null;
afterEach(async () => {
  await fresh?.close().catch(() => undefined);
  fresh = null;
  await world.close();
});

const REPLICAS_BEHIND = { redisMinReplicas: 1, redisWaitMs: 50 } as Partial<Config>;

it('a never-sent tier-3 dispatch touched by a superseded worker is still sent once, not settled AMBIGUOUS', async () => {
  world = await gateWorld({ target: { tier: 3 }, config: REPLICAS_BEHIND });
  const old = await world.node('w-dup');
  const { id } = await grant(old);
  const answer = await old.gate.submit(refundProposal({ approval: id }));
  expect(answer.outcome).toBe('IN_FLIGHT');
  expect(world.target.sendStarts).toHaveLength(0);

  // A second process starts under the same worker id (replicas fine there); the old one learns it is superseded.
  fresh = await startNode({ config: { ...world.config, redisMinReplicas: 0 }, target: world.target, key: world.key.key, workerId: 'w-dup' });
  for (let waited = 0; old.heartbeat.supersededBy() === null && waited < 5_000; waited += 50) await sleep(50);
  expect(old.heartbeat.supersededBy()).not.toBeNull();

  // The old process's recovery loop still runs a pass: it may send nothing (worker_superseded).
  const oldPass = await old.gate.recover();
  expect(oldPass.settled).toEqual([]);
  expect(world.target.sendStarts).toHaveLength(0);

  // The worker that holds the id now recovers: nothing of the dispatch ever left, so it is sent once.
  let report = await fresh.gate.recover();
  for (let i = 0; i < 40 && report.settled.length === 0; i += 1) {
    await sleep(100);
    report = await fresh.gate.recover();
  }
  expect(report.settled).toEqual([expect.objectContaining({ effectId: answer.effectId, outcome: 'REAPPLIED_AFTER_QUERY' })]);
  expect(await entryKinds(fresh, answer.effectId)).not.toContain('AMBIGUOUS');
});
