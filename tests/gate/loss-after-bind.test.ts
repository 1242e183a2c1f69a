// Rule: I2 at most once; README "Redis" (the deployment marker): after Redis loses its data under a running worker,
// nothing is bound or sent after the loss. A binding just made that found the effect bound already (BOUND) checked the
// marker before the chain was read: a loss between that binding (bind-5) and the chain read reads the chain of a
// committed request empty under it, and it must not be dispatched again. On a Redis Cluster the dispatch step
// (propose-5, another slot) cannot check the marker, so the marker is read once more after the chain; on one server the
// dispatch step binds again (bind-propose-10), its check in the same atomic step. Either way the monitor's refusal is
// thrown and the monitor records the loss at once.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Cluster, Redis, type Command } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/core/effect-id.js';
import { createRedisClient, type RedisClient } from '../../src/redis/client.js';
import { createKeys } from '../../src/redis/keys.js';
import { createMemoryTarget, type MemoryTarget } from '../../src/targets/memory-target.js';
import { approvalTerms, refundProposal, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { startCluster } from '../support/private-cluster.js';

const SAFE = ['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--no-appendfsync-on-rewrite', 'no'];
const LOST = 'Redis lost its data while this process ran';
const scripts = fileURLToPath(new URL('../../src/redis/scripts', import.meta.url));
const source = (name: string) => `${readFileSync(join(scripts, 'lib.lua'), 'utf8')}\n${readFileSync(join(scripts, `${name}.lua`), 'utf8')}`;
const sha = (name: string) => createHash('sha1').update(source(name)).digest('hex');
// A submit binds with bind-5; an effects job takes the binding its producer made with bind-existing-5.
const BINDS: readonly unknown[] = [sha('bind-5'), sha('bind-existing-5')];

let cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of cleanup.reverse()) await close().catch(() => undefined);
  cleanup = [];
});

type Rig = { worker: TestNode; target: MemoryTarget; client: RedisClient; prefix: string };

/** A worker on the production client (durability checked, a check interval no test waits out) and a tier-2 target. */
async function rig(redisUrl: string, redisCluster: boolean): Promise<Rig> {
  const prefix = `lab${Date.now().toString(36)}`;
  const config = testConfig({ redisUrl, redisCluster, unsafeDurability: false, durabilityCheckMs: 600_000, keyPrefix: prefix });
  const client = createRedisClient(config);
  client.on('error', () => undefined);
  const target = createMemoryTarget({ tier: 2 });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const worker = await startNode({ config, target, key: testKey().key, redis: client });
  cleanup.push(() => worker.close());
  return { worker, target, client, prefix };
}

/**
 * Right after the worker's next bind-5 (or bind-existing-5) answers, and before any command the worker sends after it
 * reaches Redis, `lose` runs (the data goes, the approval is put back from someone's records). Returns whether it ran.
 */
function loseAfterBind(client: RedisClient, lose: () => Promise<void>): () => boolean {
  const original = client.sendCommand.bind(client) as (command: Command, ...rest: unknown[]) => unknown;
  let armed = true;
  let ran = false;
  let hold: Promise<void> | null = null;
  client.sendCommand = ((command: Command, ...rest: unknown[]) => {
    if (hold !== null) {
      void hold.then(() => void original(command, ...rest));
      return command.promise;
    }
    const sent = original(command, ...rest);
    if (armed && command.name === 'evalsha' && BINDS.includes(command.args[0])) {
      armed = false;
      hold = command.promise
        .then(async () => {
          await lose();
          ran = true;
        })
        .catch(() => undefined)
        .finally(() => {
          hold = null;
        });
    }
    return sent;
  }) as typeof client.sendCommand;
  return () => {
    client.sendCommand = original as typeof client.sendCommand;
    return ran;
  };
}

/** What a call came to: its outcome, or the code and message of what it threw. */
function outcomeOf(submitted: Promise<{ outcome: string }>): Promise<{ outcome: string } | { code: string; message: string }> {
  return submitted.then(
    (result) => ({ outcome: result.outcome }),
    (error: unknown) => ({ code: String((error as { code?: unknown }).code), message: (error as Error).message }),
  );
}

const refused = { code: 'redis_not_durable', message: expect.stringContaining(LOST) };

/** A committed refund, then `again` after `flush` and a restored approval run right after its bind-5 answers. */
async function committedThenLost(setup: Rig, admin: { dumpBuffer: (key: string) => Promise<Buffer | null>; restore: (key: string, ttl: number, value: Buffer) => Promise<unknown> }, flush: () => Promise<void>, again: (worker: TestNode, proposal: ReturnType<typeof refundProposal>) => Promise<{ outcome: string }>) {
  const { worker, target, client, prefix } = setup;
  const terms = approvalTerms();
  await worker.approvals.grant(terms);
  const proposal = refundProposal({ approval: terms.id });
  expect((await worker.gate.submit(proposal)).outcome).toBe('COMMITTED');
  expect(target.landings).toHaveLength(1);
  const approvalKey = createKeys(prefix).approval('payment:pi_1', terms.id);
  const approval = await admin.dumpBuffer(approvalKey);
  if (approval === null) throw new Error('no approval to put back');
  const ran = loseAfterBind(client, async () => {
    await flush();
    await admin.restore(approvalKey, 0, approval);
  });
  const answered = await outcomeOf(again(worker, proposal));
  expect(ran()).toBe(true);
  return { answered, landings: target.landings.length, monitorSawLoss: worker.durabilityMonitor.dataLoss() !== null };
}

const submitAgain = (worker: TestNode, proposal: ReturnType<typeof refundProposal>) => worker.gate.submit(proposal);
const jobAgain = async (worker: TestNode, proposal: ReturnType<typeof refundProposal>) => (await worker.gate.submitLatest(effectIdFor({ requestId: proposal.requestId, effect: proposal.effect }), proposal)).answer;

describe('a Redis Cluster that loses every master right after bind-5', () => {
  const servers: PrivateRedis[] = [];
  let admin: Cluster | null = null;
  let masters: Redis[] = [];
  beforeAll(async () => {
    servers.push(...(await startCluster([SAFE, SAFE, SAFE])));
    admin = new Cluster([{ host: '127.0.0.1', port: servers[0]?.port ?? 0 }]);
    masters = servers.map((server) => new Redis(server.url));
  }, 60_000);
  afterAll(async () => {
    admin?.disconnect();
    for (const master of masters) master.disconnect();
    await Promise.all(servers.map((server) => server.stop()));
  });
  const flushAll = async () => {
    for (const master of masters) await master.flushall();
  };

  it('a submit of a committed refund is refused as the monitor refuses a loss, and nothing is sent again', async () => {
    const setup = await rig(servers[0]?.url ?? '', true);
    if (admin === null) throw new Error('no admin');
    expect(await committedThenLost(setup, admin, flushAll, submitAgain)).toEqual({ answered: refused, landings: 1, monitorSawLoss: true });
  });

  it("an effects job's run of a committed refund (chain read beside the binding) is refused too", async () => {
    const setup = await rig(servers[0]?.url ?? '', true);
    if (admin === null) throw new Error('no admin');
    // The job's binding script has not run yet: loaded, so its first run is an EVALSHA.
    for (const master of masters) await master.script('LOAD', source('bind-existing-5'));
    expect(await committedThenLost(setup, admin, flushAll, jobAgain)).toEqual({ answered: refused, landings: 1, monitorSawLoss: true });
  });
});

describe('one Redis server that loses its data right after bind-5', () => {
  it("an effects job's run of a committed refund binds again in its dispatch step, which finds the loss", async () => {
    const server = await startPrivateRedis(['--save', '', ...SAFE]);
    cleanup.push(() => server.stop());
    const admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
    admin.on('error', () => undefined);
    cleanup.push(async () => admin.disconnect());
    const setup = await rig(server.url, false);
    // One server binds with its dispatch step: bind-5 has not run yet, and is loaded so its first run is an EVALSHA.
    for (const name of ['bind-5', 'bind-existing-5']) await admin.script('LOAD', source(name));
    expect(await committedThenLost(setup, admin, async () => void (await admin.flushall()), jobAgain)).toEqual({ answered: refused, landings: 1, monitorSawLoss: true });
  });
});
