// What a submit costs in Redis commands (issue 8 §2). On one server a new effect's binding is made in its dispatch
// step (bind-propose-9), so its happy path is two commands: that step, and the settle.
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { Command } from 'ioredis';
import { refundProposal, startNode, type World } from '../support/harness.js';
import { gateWorld, grant } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

/** Records the commands `redis` sends that name `needle` in any argument (so a heartbeat in between is not counted). */
function commandsNaming(redis: Redis): { naming(needle: string): string[] } {
  const sent: Command[] = [];
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: Command, ...rest: unknown[]) => {
    sent.push(command);
    return (send as (...args: unknown[]) => unknown)(command, ...rest);
  }) as Redis['sendCommand'];
  return { naming: (needle) => sent.filter((command) => command.args.some((arg) => String(arg).includes(needle))).map((command) => command.name) };
}

describe('Redis commands per submit', () => {
  it('a new effect commits in two commands on one server: the dispatch step, which binds it, and the settle', async () => {
    world = await gateWorld();
    const redis = new Redis(world.config.redisUrl, { maxRetriesPerRequest: 1 });
    const seen = commandsNaming(redis);
    const a = await startNode({ config: world.config, target: world.target, key: world.key.key, redis });
    world.nodes.push(a);
    const terms = await grant(a);
    const proposal = refundProposal({ approval: terms.id, amount: 200 });
    const answer = await a.gate.submit(proposal);
    expect(answer.outcome).toBe('COMMITTED');
    expect(seen.naming(answer.effectId)).toEqual(['evalsha', 'evalsha']);
    expect(await a.journal.partitionOf(answer.effectId)).not.toBeNull();
  });

  it('a resubmit of a committed effect is answered from its chain, and is a duplicate', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const terms = await grant(a);
    const proposal = refundProposal({ approval: terms.id, amount: 200 });
    expect((await a.gate.submit(proposal)).outcome).toBe('COMMITTED');
    expect((await a.gate.submit(proposal)).outcome).toBe('DUPLICATE_IGNORED');
    expect(world.target.landedCount(a.gate.effectIdOf(proposal))).toBe(1);
  });
});
