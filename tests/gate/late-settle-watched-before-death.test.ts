// Rule (journal.ts settle, lib.lua apply_upkeep; README "Missed webhooks"): a settle more than RECENT_COMMIT_MS after
// its effect's binding is found by the reconciler only through the watch list, so its entry is in Redis before the
// settle is: a worker that dies right after the commit (its connection gone with it) leaves the effect on the list,
// whether recovery committed it or an effects job did under a binding its producer made long before. Before, the entry
// waited in the process's memory for a batched upkeep (50 ms) that a death lost, and no pass read the effect again: a
// refund.failed or dispute whose webhook was missed was never recorded. The list still holds nothing a reconciler
// reads that was never sent.
import { Redis, type Command } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createProposalRecorder, effectIdFor, watchedEffects } from '../../src/interlock.js';
import { createKeys } from '../../src/redis/keys.js';
import { kill, refundProposal, startNode, type TestNode, type World } from '../support/harness.js';
import { gateWorld, grant, recoverUntilSettled, submitAndCrash } from './gate-support.js';

let world: World | undefined;
let node: TestNode | undefined;
let admin: Redis | undefined;
afterEach(async () => {
  await node?.close().catch(() => undefined);
  node = undefined;
  await admin?.quit();
  admin = undefined;
  await world?.close();
  world = undefined;
});

/**
 * A connection that dies the moment Redis has recorded a commit on it: every command after that reply fails as on a
 * closed connection, as when the worker process is killed right then.
 */
function diesAfterCommit(redis: Redis): { died(): boolean } {
  let dead = false;
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: Command, ...rest: unknown[]) => {
    if (dead) {
      command.reject(new Error('Connection is closed.'));
      return command.promise;
    }
    const sent = (send as (...args: unknown[]) => unknown)(command, ...rest);
    if ((command.name === 'evalsha' || command.name === 'eval') && command.args.some((arg) => String(arg) === 'COMMITTED')) {
      command.promise.then(
        () => {
          dead = true;
        },
        () => undefined,
      );
    }
    return sent;
  }) as Redis['sendCommand'];
  return { died: () => dead };
}

/** Makes the binding of `effectId` in the effects-by-time index `ago` ms old (as if made then). */
async function bindingMadeAgo(redis: Redis, keyPrefix: string, effectId: string, now: number, ago: number): Promise<void> {
  expect(await redis.zadd(createKeys(keyPrefix).effectsByTime, 'XX', 'CH', String(now - ago), effectId)).toBe(1);
}

async function onWatchList(redis: Redis, keyPrefix: string, effectId: string): Promise<boolean> {
  return (await redis.zscore(createKeys(keyPrefix).watch, effectId)) !== null;
}

describe('a late settle is on the watch list before it is written', () => {
  it('a commit by recovery 20 minutes after its binding stays on the watch list when its worker dies right after it', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const { id } = await grant(a);
    world.target.inject({ kind: 'crash-before-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval: id }));
    await kill(a);
    admin = new Redis(world.config.redisUrl);
    const now = await a.journal.serverTime();
    await bindingMadeAgo(admin, world.config.keyPrefix, effectId, now, 20 * 60_000);
    const own = new Redis(world.config.redisUrl, { maxRetriesPerRequest: 1 });
    const connection = diesAfterCommit(own);
    node = await startNode({ config: world.config, target: world.target, key: world.key.key, workerId: 'b', redis: own });
    const report = await recoverUntilSettled(node, effectId, 10);
    expect(report.settled[0]?.outcome).toBe('COMMITTED_BY_RETRY');
    expect(connection.died()).toBe(true);
    expect(await onWatchList(admin, world.config.keyPrefix, effectId)).toBe(true);
    expect((await watchedEffects(a.stores, now - 60_000)).effectIds).toEqual([effectId]);
  });

  it('a commit by an effects job under a binding its producer made hours before stays on the watch list when the worker dies right after it', async () => {
    world = await gateWorld();
    const own = new Redis(world.config.redisUrl, { maxRetriesPerRequest: 1 });
    node = await startNode({ config: world.config, target: world.target, key: world.key.key, workerId: 'w', redis: own });
    const { id } = await grant(node);
    const proposal = refundProposal({ approval: id });
    const effectId = effectIdFor({ requestId: proposal.requestId, effect: proposal.effect });
    // A producer that bound, then failed before recording; its request retried hours later.
    const bound = await node.journal.bind(effectId, 'payment:pi_1');
    if (bound.status !== 'OTHER_SUBJECT') node.journal.unindex(effectId, bound.token);
    await node.journal.flushIndex();
    admin = new Redis(world.config.redisUrl);
    const now = await node.journal.serverTime();
    await bindingMadeAgo(admin, world.config.keyPrefix, effectId, now, 3 * 3_600_000);
    const recorded = await createProposalRecorder(node.stores)(proposal);
    expect(recorded).toMatchObject({ status: 'recorded', effectId });
    const connection = diesAfterCommit(own);
    const { answer } = await node.gate.submitLatest(effectId, proposal, recorded.status === 'recorded' ? recorded.onlyEntry : null);
    expect(answer.outcome).toBe('COMMITTED');
    expect(connection.died()).toBe(true);
    expect(await onWatchList(admin, world.config.keyPrefix, effectId)).toBe(true);
  });

  it('an effects job under a binding made long before that is refused before any send is not listed for the reconciler', async () => {
    world = await gateWorld();
    node = await world.node('w');
    const proposal = refundProposal({ approval: 'ap_nobody_granted' });
    const effectId = effectIdFor({ requestId: proposal.requestId, effect: proposal.effect });
    const recorded = await createProposalRecorder(node.stores)(proposal);
    expect(recorded).toMatchObject({ status: 'recorded', effectId });
    admin = new Redis(world.config.redisUrl);
    const now = await node.journal.serverTime();
    await bindingMadeAgo(admin, world.config.keyPrefix, effectId, now, 3 * 3_600_000);
    const { answer } = await node.gate.submitLatest(effectId, proposal, recorded.status === 'recorded' ? recorded.onlyEntry : null);
    expect(answer.outcome).toBe('REFUSED:lease');
    await node.journal.flushIndex();
    expect((await watchedEffects(node.stores, now - 60_000)).effectIds).toEqual([]);
  });
});
