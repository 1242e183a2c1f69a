// Rule: README "Settings can stay right while the data goes": once the deployment marker shows Redis lost its data
// under a running process, that process "sends (and records) nothing more until it is restarted", since a request
// sent before the loss reads as new. INTERLOCK_UNSAFE_DURABILITY accepts settings that MAY lose data; it must not
// turn a loss that DID happen (and that the process itself logs as "sends nothing") into a second send.
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { approvalTerms, refundProposal, sleep, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const servers: PrivateRedis[] = [];
const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await Promise.all(servers.map((redis) => redis.stop()));
});

it('with the durability opt-out, a FLUSHALL seen by the marker stops the process sending all the same: the request is not sent a second time', async () => {
  // A test machine's Redis: no append-only file, the operator opted out of the durability check.
  const redis = await startPrivateRedis(['--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction']);
  servers.push(redis);
  const admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  closers.push(() => admin.quit());
  const target = createMemoryTarget({ tier: 2 });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const config = testConfig({ redisUrl: redis.url, unsafeDurability: true, durabilityCheckMs: 200 });
  const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  const worker: TestNode = await startNode({ config, target, key: testKey().key, redis: client });
  closers.push(() => worker.close());

  const terms = approvalTerms();
  await worker.approvals.grant(terms);
  const proposal = refundProposal({ approval: terms.id });
  expect((await worker.gate.submit(proposal)).outcome).toBe('COMMITTED');
  expect(target.landings).toHaveLength(1);

  await admin.flushall();
  await worker.approvals.grant(terms);
  const giveUp = Date.now() + 5_000;
  while (!(worker.durabilityMonitor.current() as { dataLost?: boolean }).dataLost && Date.now() < giveUp) await sleep(20);
  // The process knows: its own reading says Redis lost its data and that it sends nothing until restarted.
  expect(worker.durabilityMonitor.current().problems[0]).toContain('sends nothing until it is restarted');

  const again = await worker.gate.submit(proposal).then(
    (answer) => answer.outcome,
    (error: unknown) => `refused: ${(error as Error).message.slice(0, 60)}`,
  );
  expect(target.landings, `the second submit answered ${again}`).toHaveLength(1);
});
