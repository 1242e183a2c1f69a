// Rule (DESIGN §3 P, §4 AMBIGUOUS; release-claim-1 `first`, take-over-1 `neverSent`): AMBIGUOUS is for an effect nobody
// can tell whether it landed. A worker whose dispatch step ran in Redis but whose reply was lost (the connection
// dropped, Redis restarted after the fsync) never sent anything: a send only follows the step's OK. Recovery of that
// dispatch must not settle a tier-3 effect AMBIGUOUS (and ask a person to check by hand) when it is known that no request
// ever left; it should send it once or refuse it.
import { afterEach, expect, it } from 'vitest';
import { refundProposal, type World } from '../support/harness.js';
import { gateWorld, grant, openState, recoverUntilSettled } from './gate-support.js';

let world: World | null = null;
afterEach(async () => {
  await world?.close();
  world = null;
});

it('a tier-3 dispatch whose reply was lost before any send is not settled AMBIGUOUS by its own worker', async () => {
  world = await gateWorld({ target: { tier: 3 } });
  const a = await world.node('a');
  const { id } = await grant(a);
  const proposal = refundProposal({ approval: id });
  const effectId = a.gate.effectIdOf(proposal);
  // The dispatch step runs in Redis, then the connection drops before its reply is read.
  const real = a.journal.bindAndPropose.bind(a.journal);
  a.journal.bindAndPropose = async (request) => {
    await real(request);
    throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
  };
  await expect(a.gate.submit(proposal)).rejects.toThrow(/ECONNRESET/);
  a.journal.bindAndPropose = real;
  expect((await openState(a, effectId)).state.open).toBe(true);
  expect(world.target.sendStarts.filter((s) => s.effectId === effectId)).toHaveLength(0);

  // The worker (alive, same boot) recovers its own dispatch.
  const report = await recoverUntilSettled(a, effectId);
  // Sent once, by recovery, its facts re-checked: the refund landed once and the receipt says so.
  expect({ outcome: report.settled[0]?.outcome, sends: world.target.sendStarts.filter((s) => s.effectId === effectId).length, landed: world.target.landedCount(effectId) }).toEqual({ outcome: 'REAPPLIED_AFTER_QUERY', sends: 1, landed: 1 });
});
