// Rule (DESIGN §3 P, §4 AMBIGUOUS; release-claim-1 `first`, take-over-1 `neverSent`): AMBIGUOUS is for an effect nobody
// can tell whether it landed. A worker whose dispatch step ran in Redis but whose reply was lost (the connection
// dropped, Redis restarted after the fsync) never sent anything: a send only follows the step's OK. Recovery of that
// dispatch must not settle a tier-3 effect AMBIGUOUS (and ask a person to check by hand) when it is known that no request
// ever left; it should send it once or refuse it. But only about a dispatch that step opened itself (I2): a second
// submit of the same proposal in the same process whose step lost its reply after the first had dispatched and started
// sending must not mark the first's live send as never sent, or a recoverer sends the tier-3 refund a second time.
import { Redis, type Command } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { refundProposal, sleep, startNode, type TestNode, type World } from '../support/harness.js';
import { gateWorld, grant, openState, recoverUntilSettled } from './gate-support.js';

let world: World | null = null;
afterEach(async () => {
  await world?.close();
  world = null;
});

/**
 * A node whose dispatch steps (bind-propose-10) run in Redis as sent, and whose replies are lost for the steps `lose`
 * names (1 = the first step sent): the command fails with ECONNRESET after Redis ran it, as when the connection drops
 * between the two.
 */
async function nodeLosingReplies(on: World, workerId: string, lose: readonly number[]): Promise<TestNode> {
  const redis = new Redis(on.config.redisUrl, { maxRetriesPerRequest: 1 });
  const send = redis.sendCommand.bind(redis);
  let steps = 0;
  redis.sendCommand = (command: Command, ...rest: unknown[]) => {
    const sent = (send as (command: Command, ...rest: unknown[]) => unknown)(command, ...rest);
    const isDispatch = command.name === 'evalsha' && String(command.args[1]) === '10';
    if (isDispatch && lose.includes(++steps)) {
      command.promise = command.promise.then(() => {
        throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
      });
    }
    return sent as ReturnType<Redis['sendCommand']>;
  };
  return startNode({ config: on.config, target: on.target, key: on.key.key, workerId, redis });
}

it('a tier-3 dispatch whose reply was lost before any send is not settled AMBIGUOUS by its own worker', async () => {
  world = await gateWorld({ target: { tier: 3 } });
  const a = await nodeLosingReplies(world, 'a', [1]);
  try {
    const { id } = await grant(a);
    const proposal = refundProposal({ approval: id });
    const effectId = a.gate.effectIdOf(proposal);
    await expect(a.gate.submit(proposal)).rejects.toThrow(/ECONNRESET/);
    expect((await openState(a, effectId)).state.open).toBe(true);
    expect(world.target.sendStarts.filter((s) => s.effectId === effectId)).toHaveLength(0);

    // The worker (alive, same boot) recovers its own dispatch: sent once, its facts re-checked.
    const report = await recoverUntilSettled(a, effectId);
    expect({ outcome: report.settled[0]?.outcome, sends: world.target.sendStarts.filter((s) => s.effectId === effectId).length, landed: world.target.landedCount(effectId) }).toEqual({ outcome: 'REAPPLIED_AFTER_QUERY', sends: 1, landed: 1 });
  } finally {
    await a.close();
  }
});

it('a lost dispatch reply of a concurrent second submit does not release the first submit\'s live tier-3 send as unsent', async () => {
  world = await gateWorld({ target: { tier: 3 }, config: { sendTimeoutMs: 1_500, claimTtlMs: 3_000 } });
  const a = await nodeLosingReplies(world, 'a', [2]);
  try {
    const b = await world.node('b');
    const { id } = await grant(a);
    const proposal = refundProposal({ approval: id });
    const effectId = a.gate.effectIdOf(proposal);
    world.target.inject({ kind: 'slow-send', delayMs: 1_000 });

    // Both submits read the (empty) chain; the first's dispatch step answers and its send starts, the second's step
    // runs (finding the dispatch in flight) and its reply is lost.
    const one = a.gate.submit(proposal).then((r) => r.outcome, (e: unknown) => `threw: ${String(e)}`);
    const two = a.gate.submit(proposal).then((r) => r.outcome, (e: unknown) => `threw: ${String(e)}`);
    expect(await two).toMatch(/ECONNRESET/);
    expect((await openState(a, effectId)).state.open).toBe(true);
    expect(world.target.sendStarts.filter((s) => s.effectId === effectId)).toHaveLength(1);

    // While worker a's request is still on the wire, worker b's recovery pass comes along.
    const byB = await b.gate.recover({ only: [effectId] });
    const first = await one;
    await sleep(1_500);
    expect({ first, byB: byB.settled.map((s) => s.outcome), sends: world.target.sendStarts.filter((s) => s.effectId === effectId).length, landed: world.target.landedCount(effectId) }).toEqual({ first: expect.any(String), byB: expect.any(Array), sends: 1, landed: 1 });
  } finally {
    await a.close();
  }
});
