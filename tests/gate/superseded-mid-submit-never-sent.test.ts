// Rule: a submit whose send its guard refuses after the dispatch was written (the worker superseded while it read the
// premises) gives the claim up saying nothing left (release-claim-1 `first`), so the worker that takes the tier-3
// dispatch over sends it once, never settles it AMBIGUOUS.
import { afterEach, expect, it } from 'vitest';
import { refundProposal, sleep, startNode, type TestNode, type World } from '../support/harness.js';
import { entryKinds, gateWorld, grant } from './gate-support.js';

let world: World;
let fresh: TestNode | null = null;
afterEach(async () => {
  await fresh?.close().catch(() => undefined);
  fresh = null;
  await world.close();
});

it('a tier-3 dispatch whose send was refused by the superseded guard is sent once by recovery, never AMBIGUOUS', async () => {
  world = await gateWorld({ target: { tier: 3 } });
  const old = await world.node('w-dup2');
  const { id } = await grant(old);
  world.target.inject({ kind: 'slow-read', delayMs: 450 });
  const proposal = refundProposal({ approval: id });
  const submitting = old.gate.submit(proposal).then(
    () => null,
    (error: unknown) => error,
  );
  fresh = await startNode({ config: world.config, target: world.target, key: world.key.key, workerId: 'w-dup2' });
  for (let waited = 0; old.heartbeat.supersededBy() === null && waited < 5_000; waited += 20) await sleep(20);
  const refused = await submitting;
  expect((refused as { code?: string } | null)?.code).toBe('worker_superseded');
  expect(world.target.sendStarts).toHaveLength(0);
  const effectId = old.gate.effectIdOf(proposal);
  expect(await entryKinds(fresh, effectId)).toContain('DISPATCHED');

  let report = await fresh.gate.recover();
  for (let i = 0; i < 40 && report.settled.length === 0; i += 1) {
    await sleep(100);
    report = await fresh.gate.recover();
  }
  expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'REAPPLIED_AFTER_QUERY' })]);
  expect(await entryKinds(fresh, effectId)).not.toContain('AMBIGUOUS');
});
