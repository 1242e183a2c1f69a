// Rule: a worker superseded under its worker id (a second process beats with the same INTERLOCK_WORKER_ID, and the
// first one's next beat finds the other's nonce: beat-1.lua) dispatches and sends nothing more. Every other worker,
// the new process included, reads its claims as a dead sender's and takes them over at once, so a send it made
// would race their takeover. Its submits are refused with the retryable `worker_superseded` (an effects job waits
// and goes back to the queue), and nothing reaches the target.
import { afterEach, expect, it } from 'vitest';
import { errorCode, isRetryable } from '../../src/core/errors.js';
import { refundProposal, sleep, type World } from '../support/harness.js';
import { gateWorld, grant } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

it('a worker superseded by another process under its worker id dispatches and sends nothing', async () => {
  world = await gateWorld();
  const old = await world.node('worker-1');
  const { id } = await grant(old);
  const fresh = await world.node('worker-1');
  // The test's beats come every 100 ms: the old process has met the new nonce by now.
  for (let waited = 0; old.heartbeat.supersededBy() === null && waited < 5_000; waited += 50) await sleep(50);
  expect(old.heartbeat.supersededBy()).toBe(fresh.heartbeat.nonce);
  const refused = await old.gate.submit(refundProposal({ approval: id })).then(
    () => null,
    (error: unknown) => error,
  );
  expect(errorCode(refused)).toBe('worker_superseded');
  expect(isRetryable(refused)).toBe(true);
  expect(world.target.landings).toHaveLength(0);
  // The process that holds the worker id now sends as before.
  expect((await fresh.gate.submit(refundProposal({ approval: id, requestId: 'after-supersede' }))).outcome).toBe('COMMITTED');
});
