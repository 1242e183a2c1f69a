// Rule (295be5f, release-claim-1 `first`): a dispatch step whose reply was lost after it ran gives its claim up as
// never sent, so recovery sends the tier-3 effect once instead of settling it AMBIGUOUS. ioredis fails every command
// waiting on a dropped connection with ONE error object (Redis.flushQueue(new MaxRetriesPerRequestError(...))), so
// two dispatch steps of one worker lost together share their error; each must still release its own dispatch (a sealed
// head kept by the error object would be overwritten by the second step's: journal.lostDispatchHead keys it by request).
import { Redis, type Command } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { refundProposal, startNode, type TestNode, type World } from '../support/harness.js';
import { gateWorld, grant, openState, recoverUntilSettled } from './gate-support.js';

let world: World | null = null;
afterEach(async () => {
  await world?.close();
  world = null;
});

async function nodeLosingRepliesTogether(on: World, workerId: string, count: number): Promise<TestNode> {
  const redis = new Redis(on.config.redisUrl, { maxRetriesPerRequest: 1 });
  const send = redis.sendCommand.bind(redis);
  const shared = Object.assign(new Error('Reached the max retries per request limit (which is 1).'), { name: 'MaxRetriesPerRequestError' });
  let steps = 0;
  // Each lost step waits until all `count` have run in Redis; then all are failed in one loop, as flushQueue does.
  const held: (() => void)[] = [];
  let answered = 0;
  redis.sendCommand = (command: Command, ...rest: unknown[]) => {
    const sent = (send as (command: Command, ...rest: unknown[]) => unknown)(command, ...rest);
    const isDispatch = command.name === 'evalsha' && String(command.args[1]) === '10';
    if (isDispatch && ++steps <= count) {
      command.promise = command.promise.then(() => new Promise((_, reject) => {
        held.push(() => reject(shared));
        answered += 1;
        if (answered === count) for (const fail of held) fail();
      }));
    }
    return sent as ReturnType<Redis['sendCommand']>;
  };
  return startNode({ config: on.config, target: on.target, key: on.key.key, workerId, redis });
}

it('two tier-3 dispatches whose replies were lost together are each released as never sent, and each sent once by recovery', async () => {
  world = await gateWorld({ target: { tier: 3 } });
  world.target.world.set('payment:pi_2', { chargebacks: [], refunded_by_others: 0 });
  const a = await nodeLosingRepliesTogether(world, 'a', 2);
  try {
    const one = refundProposal({ approval: (await grant(a)).id });
    const two = refundProposal({ approval: (await grant(a, { scope: 'payment:pi_2' })).id, paymentIntent: 'pi_2' });
    const ids = [a.gate.effectIdOf(one), a.gate.effectIdOf(two)];
    const results = await Promise.allSettled([a.gate.submit(one), a.gate.submit(two)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    for (const id of ids) expect((await openState(a, id)).state.open).toBe(true);
    const outcomes: string[] = [];
    for (const id of ids) {
      const report = await recoverUntilSettled(a, id);
      outcomes.push(report.settled[0]?.outcome ?? 'none');
    }
    expect(outcomes).toEqual(['REAPPLIED_AFTER_QUERY', 'REAPPLIED_AFTER_QUERY']);
  } finally {
    await a.close();
  }
});
