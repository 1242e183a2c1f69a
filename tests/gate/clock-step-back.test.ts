// Rule: a Redis clock that steps back behind an effect's last entry (an NTP step; a failover to a replica whose clock
// is behind, holding the times the old master wrote) does not stop the journal: a send that landed is committed at
// once, its entry placed just after the last one (lib.lua check_place_of). Before, every attempt was BAD_TIME (the
// entry had to be after `lastAt` and within a second of Redis's clock at once) and the submit threw "its chain kept
// moving under concurrent writers" until the clock caught up.
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { refundProposal, sleep, type World } from '../support/harness.js';
import { gateWorld, grant, openState } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

it('a send that landed is committed even though the Redis clock is now 5 s behind the effect\'s last entry', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  const proposal = refundProposal({ approval: id });
  const effectId = a.gate.effectIdOf(proposal);
  world.target.inject({ kind: 'slow-send', delayMs: 300 });
  const sending = a.gate.submit(proposal);
  for (;;) {
    const read = await openState(a, effectId).catch(() => null);
    if (read?.state.open) break;
    await sleep(5);
  }
  // While the request is on the wire, Redis fails over to a replica whose clock is 5 s behind: the state it holds
  // (replicated as values) says the last entry was written 5 s after what this Redis now calls "now".
  const redis = new Redis(world.config.redisUrl);
  try {
    const partition = await a.journal.partitionOf(effectId);
    const key = a.journal.keys.state(partition as string, effectId);
    await redis.hset(key, 'lastAt', String(Number(await redis.hget(key, 'lastAt')) + 5_000));
  } finally {
    await redis.quit();
  }
  const answer = await sending.then((result) => result.outcome, (error: Error) => `threw: ${error.message}`);
  expect(world.target.landedCount(effectId)).toBe(1);
  expect(answer).toBe('COMMITTED');
});
