// Rule: a worker superseded under its worker id sends nothing while the other process beats under it, and takes the
// id back (and sends again) once that process has gone: a one-off sender under the service's id (an operator's
// `interlock recover` with the service's environment) must not shut the service's worker off until it restarts.
import { afterEach, expect, it } from 'vitest';
import { errorCode } from '../../src/core/errors.js';
import { refundProposal, sleep, startNode, type TestNode, type World } from '../support/harness.js';
import { gateWorld, grant } from './gate-support.js';

let world: World;
let oneOff: TestNode | null = null;
afterEach(async () => {
  await oneOff?.close().catch(() => undefined);
  oneOff = null;
  await world.close();
});

it('a worker superseded by a one-off sender (interlock recover) under its worker id sends again once that sender stopped', async () => {
  world = await gateWorld();
  const service = await world.node('svc-worker');
  const { id } = await grant(service);
  // The operator runs `interlock recover` with the service's environment: one pass, then it closes.
  oneOff = await startNode({ config: world.config, target: world.target, key: world.key.key, workerId: 'svc-worker' });
  await oneOff.gate.recover();
  for (let waited = 0; service.heartbeat.supersededBy() === null && waited < 5_000; waited += 50) await sleep(50);
  expect(service.heartbeat.supersededBy()).not.toBeNull();
  await oneOff.close();
  oneOff = null;
  // Well past a heartbeat TTL: nobody else beats under the id now.
  await sleep(1_500);
  const answer = await service.gate.submit(refundProposal({ approval: id })).then(
    (result) => result.outcome,
    (error: unknown) => errorCode(error),
  );
  expect(answer).toBe('COMMITTED');
});
