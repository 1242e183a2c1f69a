// Rule (DESIGN §3 F and P; settle.ts commit / context.ts `heard`): a landing the gate heard while Redis was down is
// the truth about the effect. When another worker meanwhile settled the effect AMBIGUOUS (tier 3, nobody can look),
// the worker that heard the landing must still put it on the record (LATE_RESULT, which late-5 turns into a commit);
// dropping it leaves a receipt that answers "unknown" for a refund the gate saw land.
import { afterAll, expect, it } from 'vitest';
import { createWorld, refundProposal, sleep, startNode, type TestNode, type World } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { eventually, grant, openState, PAYMENT, FACTS, untilRedisTime } from './gate-support.js';
import { createRedisClient } from '../../src/redis/client.js';
import { outcomeOf, verify } from '../../src/core/verify.js';

let redis: PrivateRedis | null = null;
let world: World | null = null;
const extra: TestNode[] = [];

afterAll(async () => {
  for (const node of extra) await node.close().catch(() => undefined);
  await world?.close().catch(() => undefined);
  await redis?.stop();
});

it('a tier-3 landing heard by worker a during a Redis outage is not lost when worker b settles the effect AMBIGUOUS first', async () => {
  redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always']);
  world = await createWorld({
    target: { tier: 3 },
    config: { redisUrl: redis.url, unsafeDurability: false, sendTimeoutMs: 1_500, claimTtlMs: 2_500, settleMarginMs: 150, heartbeatMs: 100, heartbeatTtlMs: 500, dedupMarginMs: 20_000 },
  });
  world.target.world.set(PAYMENT, { ...FACTS });
  const mk = (id: string) => startNode({ config: world!.config, target: world!.target, key: world!.key.key, workerId: id, redis: createRedisClient({ redisUrl: redis!.url, redisCluster: false, redisCommandTimeoutMs: world!.config.redisCommandTimeoutMs }) });
  const a = await mk('worker-a');
  const b = await mk('worker-b');
  extra.push(a, b);
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
