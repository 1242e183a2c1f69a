// What a submit costs in Redis commands (issue 8 §2). On one server a new effect's binding is made in its dispatch
// step (bind-propose-10), so its happy path is three commands: that step, the claim check right before the request
// leaves (check-epoch-2: no local clock can tell a paused VM, send.ts sendOnce), and the settle.
import { Redis, type Command } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { commandsNaming } from '../support/count-commands.js';
import { refundProposal, sleep, startNode, type World } from '../support/harness.js';
import { FACTS, PAYMENT, gateWorld, grant, verifiedReceipt } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

describe('Redis commands per submit', () => {
  it('a new effect commits in three commands on one server: the dispatch step, which binds it, the claim check before the send, and the settle', async () => {
    world = await gateWorld();
    const redis = new Redis(world.config.redisUrl, { maxRetriesPerRequest: 1 });
    const seen = commandsNaming(redis);
    const a = await startNode({ config: world.config, target: world.target, key: world.key.key, redis });
    world.nodes.push(a);
    const terms = await grant(a);
    const proposal = refundProposal({ approval: terms.id, amount: 200 });
    const answer = await a.gate.submit(proposal);
    expect(answer.outcome).toBe('COMMITTED');
    expect(seen.naming(answer.effectId)).toEqual(['evalsha', 'evalsha', 'evalsha']);
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

  it('a dispatch step that fails keeps the index upkeep it carried: a finished submit\'s index entry is still dropped', async () => {
    world = await gateWorld();
    const redis = new Redis(world.config.redisUrl, { maxRetriesPerRequest: 1 });
    const a = await startNode({ config: world.config, target: world.target, key: world.key.key, redis });
    world.nodes.push(a);
    const terms = await grant(a);
    const first = await a.gate.submit(refundProposal({ approval: terms.id, amount: 100 }));
    expect(first.outcome).toBe('COMMITTED');
    // The next submit carries the first one's finished index entry in its dispatch step, which Redis does not take.
    const send = redis.sendCommand.bind(redis);
    redis.sendCommand = ((command: Command, ...rest: unknown[]) => {
      if (command.name !== 'evalsha') return (send as (...args: unknown[]) => unknown)(command, ...rest);
      command.reject(new Error('Connection is closed.'));
      return command.promise;
    }) as Redis['sendCommand'];
    await expect(a.gate.submit(refundProposal({ approval: terms.id, amount: 200 }))).rejects.toThrow('Connection is closed.');
    redis.sendCommand = send;
    const entries = async () => (await redis.zrange(a.journal.keys.openIndex, '0', '-1')).filter((entry) => entry.startsWith(first.effectId));
    for (let waited = 0; waited < 2_000 && (await entries()).length > 0; waited += 50) await sleep(50);
    expect(await entries()).toEqual([]);
  });

  it('keeps the state\'s entry count equal to its chain, for a new chain and for one a refusal started (the dispatch step sets it, reading the chain only when there is one)', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const terms = await grant(a, { maxUses: 5 });
    const counted = async (effectId: string) => {
      const partition = await a.journal.partitionOf(effectId);
      if (partition === null) throw new Error(`effect ${effectId} is not bound`);
      const { state } = await a.journal.readState(partition, effectId);
      const entries = await a.journal.entries(partition, effectId);
      expect(state.count).toBe(entries.length);
      return entries.map((entry) => entry.kind);
    };
    const fresh = await a.gate.submit(refundProposal({ approval: terms.id, amount: 100 }));
    expect(fresh.outcome).toBe('COMMITTED');
    expect(await counted(fresh.effectId)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
    // Refused on facts that moved, then sent once they are back: the second dispatch step appends to the chain.
    const proposal = refundProposal({ approval: terms.id, amount: 100 });
    world.target.world.set(PAYMENT, { ...FACTS, refunded_by_others: 500 });
    expect((await a.gate.submit(proposal)).outcome).toBe('REFUSED:stale_premise');
    world.target.world.set(PAYMENT, { ...FACTS });
    const again = await a.gate.submit(proposal);
    expect(again.outcome).toBe('COMMITTED');
    expect(await counted(again.effectId)).toEqual(['PROPOSED', 'AUTHORIZED', 'REFUSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
    await verifiedReceipt(world, a, again.effectId);
  });
});
