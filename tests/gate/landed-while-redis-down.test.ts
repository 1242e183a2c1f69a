// Rule (settle.ts commit, GateContext.heard): "Redis dies between dispatch and settle: the send happened, the effect must end COMMITTED
// after Redis returns". A worker whose send landed and got its definite answer while Redis was down must not lose that
// answer: once Redis is back the effect ends COMMITTED. On a tier-3 target (no dedupe, no lookup) nobody else can ever
// learn it, so dropping the answer turns a known landing into AMBIGUOUS (an operator is asked to check by hand a
// refund the gate saw land).
import { afterAll, expect, it } from 'vitest';
import { createWorld, refundProposal, sleep, startNode, type TestNode, type World } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { eventually, grant, openState, PAYMENT, FACTS } from './gate-support.js';
import { createRedisClient } from '../../src/redis/client.js';
import { recoverUntilSettled } from '../../src/gate/recovery-loop.js';
import { outcomeOf } from '../../src/core/verify.js';

let redis: PrivateRedis | null = null;
let world: World | null = null;
const extra: TestNode[] = [];

afterAll(async () => {
  for (const node of extra) await node.close().catch(() => undefined);
  await world?.close().catch(() => undefined);
  await redis?.stop();
});

it('a tier-3 send that landed while Redis was down ends COMMITTED once Redis is back, not AMBIGUOUS', async () => {
  redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always']);
  world = await createWorld({
    target: { tier: 3 },
    config: { redisUrl: redis.url, unsafeDurability: false, sendTimeoutMs: 4_000, claimTtlMs: 8_000, settleMarginMs: 150, heartbeatMs: 100, heartbeatTtlMs: 500, dedupMarginMs: 20_000 },
  });
  world.target.world.set(PAYMENT, { ...FACTS });
  // The production client (maxRetriesPerRequest 3, bounded waits), as `serve` builds it.
  const client = createRedisClient({ redisUrl: redis.url, redisCluster: false, redisCommandTimeoutMs: world.config.redisCommandTimeoutMs });
  const a = await startNode({ config: world.config, target: world.target, key: world.key.key, workerId: 'worker-a', redis: client });
  extra.push(a);
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
