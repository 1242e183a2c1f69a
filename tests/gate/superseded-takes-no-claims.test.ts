// Rule: a worker superseded under its worker id takes no claims in recovery: it could send none of them, and each one
// it took would hold the claim away, for a pass, from the worker that can send it.
import { afterEach, expect, it } from 'vitest';
import { refundProposal, sleep, type World } from '../support/harness.js';
import { gateWorld, grant, openState, submitAndCrash } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

it('a superseded worker\'s recovery pass leaves an open dispatch\'s claim as it found it', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const old = await world.node('worker-1');
  const { id } = await grant(a);
  world.target.inject({ kind: 'crash-before-send' });
  const effectId = await submitAndCrash(a, refundProposal({ approval: id }));
  await a.close();
  await world.node('worker-1');
  for (let waited = 0; old.heartbeat.supersededBy() === null && waited < 5_000; waited += 50) await sleep(50);
  expect(old.heartbeat.supersededBy()).not.toBeNull();
  const before = await openState(old, effectId);
  const report = await old.gate.recover();
  expect(report).toMatchObject({ settled: [], waiting: [], skipped: [], unresolved: [] });
  expect((await openState(old, effectId)).state).toMatchObject({ open: true, epoch: before.state.epoch, owner: before.state.owner });
});
