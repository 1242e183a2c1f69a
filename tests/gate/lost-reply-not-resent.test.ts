// Rule (src/redis/client.ts createRedisClient, failUnanswered; README "Outcomes"): a script the service's Redis client
// wrote whose reply was lost with its connection (Redis killed after the fsync, a dropped connection) is never run a
// second time by the client after it reconnects: it reaches the gate as an error of unknown outcome. Run again, a
// COMMITTED settle answered NOT_OPEN, and the submit that sent the refund answered DUPLICATE_IGNORED ("nothing was sent
// again") with a LATE_RESULT "from a fenced-out send" on its own chain; a dispatch step run again answered a retry, so
// the tier-3 effect nobody ever sent was not released as never sent and ended AMBIGUOUS. A commit whose reply was lost
// reads the chain once: when it ends in that very commit, the submit answers COMMITTED.
import { afterEach, expect, it } from 'vitest';
import { createRedisClient, RedisReplyLost } from '../../src/redis/client.js';
import { refundProposal, startNode, type World } from '../support/harness.js';
import { replyLossProxy, scriptSha, type ReplyLossProxy } from '../support/reply-loss-proxy.js';
import { entryKinds, gateWorld, grant, recoverUntilSettled } from './gate-support.js';

let world: World | null = null;
let proxy: ReplyLossProxy | null = null;
afterEach(async () => {
  await world?.close();
  await proxy?.close();
  world = null;
  proxy = null;
});

/** A node on the connection the service makes (createRedisClient), through a proxy that can lose one reply. */
async function nodeBehindProxy(on: World) {
  proxy = await replyLossProxy(on.config.redisUrl);
  const redis = createRedisClient({ redisUrl: proxy.url, redisCluster: false, redisCommandTimeoutMs: 5_000 });
  const node = await startNode({ config: on.config, target: on.target, key: on.key.key, workerId: 'a', redis });
  on.nodes.push(node);
  return { node, proxy };
}

it('a refund sent once whose COMMITTED settle lost its reply is answered COMMITTED (its chain ends in that commit), not DUPLICATE_IGNORED, and its chain holds no LATE_RESULT', async () => {
  world = await gateWorld();
  const { node, proxy } = await nodeBehindProxy(world);
  const { id } = await grant(node);
  const settle = scriptSha('settle-5');
  proxy.arm((written) => written.includes(settle) && written.includes('COMMITTED'));
  const proposal = refundProposal({ approval: id });
  const effectId = node.gate.effectIdOf(proposal);

  // The settle ran in Redis and its answer was lost; the submit reads the chain, which ends in its own commit.
  expect(await node.gate.submit(proposal)).toMatchObject({ effectId, outcome: 'COMMITTED' });
  expect(proxy.fired()).toBe(1);
  expect(world.target.landedCount(effectId)).toBe(1);
  expect(await entryKinds(node, effectId)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);

  // This process's next pass over the effect finds it committed already: nothing more is written.
  await node.gate.recover({ only: [effectId] });
  expect(await entryKinds(node, effectId)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
});

it('a tier-3 dispatch whose reply was lost, with nothing ever sent, is sent once by recovery instead of settled AMBIGUOUS', async () => {
  world = await gateWorld({ target: { tier: 3 } });
  const { node, proxy } = await nodeBehindProxy(world);
  const { id } = await grant(node);
  proxy.arm((written) => written.includes(scriptSha('bind-propose-10')));
  const proposal = refundProposal({ approval: id });
  const effectId = node.gate.effectIdOf(proposal);

  await expect(node.gate.submit(proposal)).rejects.toBeInstanceOf(RedisReplyLost);
  expect(proxy.fired()).toBe(1);
  expect(world.target.sendStarts.filter((start) => start.effectId === effectId)).toEqual([]);

  const report = await recoverUntilSettled(node, effectId);
  expect({ outcome: report.settled[0]?.outcome, sends: world.target.sendStarts.filter((start) => start.effectId === effectId).length, landed: world.target.landedCount(effectId) }).toEqual({ outcome: 'REAPPLIED_AFTER_QUERY', sends: 1, landed: 1 });
});
