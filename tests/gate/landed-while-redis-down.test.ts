// Rule (settle.ts commit, GateContext.heard): "Redis dies between dispatch and settle: the send happened, the effect must end COMMITTED
// after Redis returns". A worker whose send landed and got its definite answer while Redis was down must not lose that
// answer: once Redis is back the effect ends COMMITTED. On a tier-3 target (no dedupe, no lookup) nobody else can ever
// learn it, so dropping the answer turns a known landing into AMBIGUOUS (an operator is asked to check by hand a
// refund the gate saw land). Nor when another worker settled the effect first, without it (its claim lapsed, and on tier
// 3 that recoverer can only say AMBIGUOUS): the landing heard is recorded as the late landing it is (late-5 commits it).
import { afterEach, expect, it } from 'vitest';
import { createWorld, refundProposal, sleep, startNode, type TestNode, type World } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { eventually, grant, openState, PAYMENT, FACTS, untilRedisTime } from './gate-support.js';
import { createRedisClient } from '../../src/redis/client.js';
import { recoverUntilSettled } from '../../src/gate/recovery-loop.js';
import { outcomeOf, verify } from '../../src/core/verify.js';

let redis: PrivateRedis | null = null;
let world: World | null = null;
const extra: TestNode[] = [];

afterEach(async () => {
  for (const node of extra.splice(0)) await node.close().catch(() => undefined);
  await world?.close().catch(() => undefined);
  await redis?.stop();
  world = null;
  redis = null;
});

/** A tier-3 world on a private, durable Redis this test may kill, and a node on it under `workerId`. */
async function tier3OnPrivateRedis(timing: { sendTimeoutMs: number; claimTtlMs: number }): Promise<{ redis: PrivateRedis; world: World; node(workerId: string): Promise<TestNode> }> {
  const started = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always']);
  redis = started;
  const made = await createWorld({
    target: { tier: 3 },
    config: { redisUrl: started.url, unsafeDurability: false, ...timing, settleMarginMs: 150, heartbeatMs: 100, heartbeatTtlMs: 500, dedupMarginMs: 20_000 },
  });
  world = made;
  made.target.world.set(PAYMENT, { ...FACTS });
  // The production client (maxRetriesPerRequest 3, bounded waits), as `serve` builds it.
  const node = async (workerId: string) => {
    const client = createRedisClient({ redisUrl: started.url, redisCluster: false, redisCommandTimeoutMs: made.config.redisCommandTimeoutMs });
    const made_ = await startNode({ config: made.config, target: made.target, key: made.key.key, workerId, redis: client });
    extra.push(made_);
    return made_;
  };
  return { redis: started, world: made, node };
}

it('a tier-3 send that landed while Redis was down ends COMMITTED once Redis is back, not AMBIGUOUS', async () => {
  const { redis, world, node } = await tier3OnPrivateRedis({ sendTimeoutMs: 4_000, claimTtlMs: 8_000 });
  const a = await node('worker-a');
  const { id } = await grant(a);
  const proposal = refundProposal({ approval: id });
  const effectId = a.gate.effectIdOf(proposal);

  world.target.inject({ kind: 'slow-send', delayMs: 1_000 });
  const sending = a.gate.submit(proposal).then((answer) => answer.outcome, (error: unknown) => `threw: ${String(error)}`);
  await eventually(async () => (await openState(a, effectId).catch(() => null))?.state.open === true, 'the dispatch to open');

  // Redis goes away while the request is on the wire; the refund lands (and worker a hears it) while Redis is down.
  await redis.kill('SIGKILL');
  const submitted = await sending;
  expect(world.target.landings.filter((landing) => landing.effectId === effectId)).toHaveLength(1);
  await sleep(300);
  await redis.restart();
  await sleep(300);

  // Whatever runs next (the job's retry, the recovery loop) settles the effect.
  await recoverUntilSettled(a.gate, a.journal, { only: [effectId], timeoutMs: 15_000 });
  const partition = await a.journal.partitionOf(effectId);
  const entries = await a.journal.entries(partition ?? '', effectId);
  const outcome = outcomeOf(entries);
  expect({ submitted, outcome }).toMatchObject({ outcome: expect.stringMatching(/^COMMITTED/) });
  expect(world.target.landings.filter((landing) => landing.effectId === effectId)).toHaveLength(1);
}, 60_000);

it('a tier-3 landing heard by worker a during a Redis outage is not lost when worker b settles the effect AMBIGUOUS first', async () => {
  const { redis, world, node } = await tier3OnPrivateRedis({ sendTimeoutMs: 1_500, claimTtlMs: 2_500 });
  const a = await node('worker-a');
  const b = await node('worker-b');
  const { id } = await grant(a);
  const proposal = refundProposal({ approval: id });
  const effectId = a.gate.effectIdOf(proposal);

  world.target.inject({ kind: 'slow-send', delayMs: 800 });
  const sending = a.gate.submit(proposal).then((answer) => answer.outcome, (error: unknown) => `threw: ${String(error)}`);
  await eventually(async () => (await openState(a, effectId).catch(() => null))?.state.open === true, 'the dispatch to open');
  const claimExpires = (await openState(a, effectId)).state.claimExpires;

  await redis.kill('SIGKILL');
  const submitted = await sending;
  expect(submitted).toMatch(/^threw/);
  expect(world.target.landedCount(effectId)).toBe(1);
  await redis.restart();

  // Worker a is alive; its claim lapses, and worker b's recovery pass happens to come first.
  await untilRedisTime(b, claimExpires + 10);
  const byB = await b.gate.recover({ only: [effectId] });
  expect(byB.settled.map((item) => item.outcome)).toEqual(['AMBIGUOUS']);
  // Then worker a's pass (its recovery loop, or the job's retry) runs.
  await a.gate.recover({ only: [effectId] });
  await sleep(200);

  const partition = (await a.journal.partitionOf(effectId)) ?? '';
  const entries = await a.journal.entries(partition, effectId);
  const receipt = JSON.parse(JSON.stringify(await a.gate.receipt(effectId)));
  const verdict = verify(receipt, { publicKeys: world.key.publicKeys });
  // The target holds exactly one landing of this effect, and worker a heard it land.
  expect(world.target.landedCount(effectId)).toBe(1);
  expect({ kinds: entries.map((e) => e.kind), outcome: outcomeOf(entries), happened: verdict.happened, answer: verdict.answer }).toMatchObject({
    outcome: 'COMMITTED_ON_QUERY',
    happened: true,
    answer: 'returned',
  });
}, 60_000);
