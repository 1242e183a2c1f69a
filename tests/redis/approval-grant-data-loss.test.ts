// Rule: a grant is never recorded into a Redis that lost the deployment's data (README "## Redis": once it has, a
// process sends and records nothing more until restarted). The approval id's binding (bind-approval-2.lua) checks the
// deployment marker this process holds in the step that binds, and the approval is written only after it: a Redis
// flushed, or restarted without its append-only file while a grant waited in the client's queue, takes nothing and the
// grant is refused (redis_not_durable) whatever the durability monitor last read. An approval looked up there is not
// "no approval" (404 unknown_approval, read as never granted) but the same refusal. And while the connection is down,
// before the reconnect's re-check has read the marker, the monitor's guard refuses (its state is unknown then).
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { checkFourEyes } from '../../src/interlock.js';
import { createKeys } from '../../src/redis/keys.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { approvalTerms, sleep, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const SAFE = ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--no-appendfsync-on-rewrite', 'no'];
const LOST = 'Redis lost its data while this process ran';

let cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of cleanup.reverse()) await close().catch(() => undefined);
  cleanup = [];
});

/** A durable private Redis, an admin connection and a worker whose check interval no test waits out. */
async function setting(): Promise<{ server: PrivateRedis; admin: Redis; worker: TestNode; client: Redis; keys: ReturnType<typeof createKeys> }> {
  const server = await startPrivateRedis(SAFE);
  cleanup.push(() => server.stop());
  const admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
  admin.on('error', () => undefined);
  cleanup.push(async () => admin.disconnect());
  const prefix = `grantloss${Date.now()}`;
  const config = testConfig({ redisUrl: server.url, unsafeDurability: false, durabilityCheckMs: 600_000, keyPrefix: prefix });
  // Commands wait in the offline queue across a restart of a few hundred ms (the harness's client gives up after one retry).
  const client = new Redis(server.url, { maxRetriesPerRequest: 50 });
  client.on('error', () => undefined);
  const worker = await startNode({ config, target: createMemoryTarget({ tier: 2 }), key: testKey().key, redis: client });
  cleanup.push(() => worker.close());
  return { server, admin, worker, client, keys: createKeys(prefix) };
}

/** What a call came to: its value's kind, or the code and message of what it threw. */
function outcomeOf(call: Promise<unknown>): Promise<{ ok: true } | { code: string; message: string }> {
  return call.then(
    () => ({ ok: true as const }),
    (error: unknown) => ({ code: String((error as { code?: unknown }).code), message: (error as Error).message }),
  );
}

/** Whether anything of approval `id` is in Redis: its binding, or its hash on its scope's partition. */
async function traces(admin: Redis, keys: ReturnType<typeof createKeys>, id: string, partition: string): Promise<{ bound: string | null; approval: number }> {
  return { bound: await admin.hget(keys.approvalPartitions, id), approval: await admin.exists(keys.approval(partition, id)) };
}

describe('grants and approval lookups on a Redis that lost the deployment data', () => {
  it('a grant after FLUSHALL is refused, nothing written, and the loss is recorded at once', async () => {
    const { admin, worker, keys } = await setting();
    await worker.approvals.grant(approvalTerms());
    await admin.flushall();
    const terms = approvalTerms();
    const answer = await outcomeOf(worker.approvals.grant(terms));
    expect({ answer, written: await traces(admin, keys, terms.id, 'payment:pi_1') }).toEqual({ answer: { code: 'redis_not_durable', message: expect.stringContaining(LOST) }, written: { bound: null, approval: 0 } });
    expect(worker.durabilityMonitor.dataLoss()).toContain(LOST);
  });

  it('a grant is refused when the marker holds another id (another process wrote it after finding none)', async () => {
    const { admin, worker, keys } = await setting();
    await admin.set(keys.deployment, 'another-deployment-id');
    const terms = approvalTerms();
    const answer = await outcomeOf(worker.approvals.grant(terms));
    expect({ answer, written: await traces(admin, keys, terms.id, 'payment:pi_1') }).toEqual({ answer: { code: 'redis_not_durable', message: expect.stringContaining('holds another id') }, written: { bound: null, approval: 0 } });
  });

  it('a grant queued while Redis is down is not written to the Redis that comes back empty', async () => {
    const { server, admin, worker, client, keys } = await setting();
    const closed = new Promise((resolve) => client.once('close', resolve));
    await server.kill('SIGKILL');
    await closed;
    const terms = approvalTerms();
    // Called while the connection is down: its commands wait in the client's offline queue, and are written when the
    // connection is back, before the re-check the reconnect starts.
    const granting = outcomeOf(worker.approvals.grant(terms));
    rmSync(join(server.dir, 'appendonlydir'), { recursive: true, force: true });
    await server.restart();
    const answer = await granting;
    expect({ answer, written: await traces(admin, keys, terms.id, 'payment:pi_1') }).toEqual({ answer: { code: 'redis_not_durable', message: expect.stringContaining(LOST) }, written: { bound: null, approval: 0 } });
  });

  it('an approval granted before the loss is not answered as never granted: describe, terms, revoke and four eyes refuse', async () => {
    const { admin, worker } = await setting();
    const terms = approvalTerms();
    await worker.approvals.grant(terms);
    // With the data there, an id never granted is not there, as before.
    expect((await worker.approvals.describe('ap_never_granted')).snapshot).toBeNull();
    await admin.flushall();
    const answers = {
      describe: await outcomeOf(worker.approvals.describe(terms.id)),
      onSubject: await outcomeOf(worker.approvals.describe(terms.id, terms.scope)),
      terms: await outcomeOf(worker.approvals.terms(terms.id, terms.scope)),
      revoke: await outcomeOf(worker.approvals.revoke(terms.id, 'ops@example.com')),
      // What a refund proposed under it meets first (POST /v1/refunds answered 404 unknown_approval).
      fourEyes: await outcomeOf(checkFourEyes(worker.stores, terms.id, ['sam'])),
    };
    const refused = { code: 'redis_not_durable', message: expect.stringContaining(LOST) };
    expect(answers).toEqual({ describe: refused, onSubject: refused, terms: refused, revoke: refused, fourEyes: refused });
  });

  it('while the connection is down the guard refuses, and lets go once it is back and re-checked', async () => {
    const { server, worker, client } = await setting();
    expect(() => worker.durabilityMonitor.assertDurable()).not.toThrow();
    const closed = new Promise((resolve) => client.once('close', resolve));
    await server.kill('SIGKILL');
    await closed;
    let down: unknown = null;
    try {
      worker.durabilityMonitor.assertDurable();
    } catch (error) {
      down = error;
    }
    expect(down).toMatchObject({ code: 'redis_not_durable', message: expect.stringContaining('dropped and is not back') });
    await server.restart();
    let durable = false;
    for (let i = 0; i < 200 && !durable; i += 1) {
      try {
        worker.durabilityMonitor.assertDurable();
        durable = true;
      } catch {
        await sleep(50);
      }
    }
    expect(durable).toBe(true);
    expect((await worker.approvals.grant(approvalTerms())).created).toBe(true);
  });
});
