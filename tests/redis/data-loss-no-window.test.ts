// Rule: Redis that loses its data under a running worker (FLUSHALL; a restart without its append-only file) makes that
// worker send nothing from the loss on, not from the durability monitor's next check (INTERLOCK_DURABILITY_CHECK_MS
// later): a request committed before the loss is never sent a second time. The binding scripts (bind-5,
// bind-propose-10) check the deployment marker in the step that binds, and a submit whose binding is from an earlier
// attempt binds again before it writes the first entries of an empty chain. The refusal is the monitor's own
// (redis_not_durable, in its words), and the monitor records the loss at once.
import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis, type Command } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createRedisClient } from '../../src/redis/client.js';
import { createRedisApprovals } from '../../src/redis/approvals.js';
import { createKeys } from '../../src/redis/keys.js';
import { createMemoryTarget, type MemoryTarget } from '../../src/targets/memory-target.js';
import { durabilityOf, type Durability } from '../../src/interlock.js';
import { approvalTerms, refundProposal, sleep, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const SAFE = ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--no-appendfsync-on-rewrite', 'no'];
const LOST = 'Redis lost its data while this process ran';

const scripts = fileURLToPath(new URL('../../src/redis/scripts', import.meta.url));
const sha = (name: string) => createHash('sha1').update(`${readFileSync(join(scripts, 'lib.lua'), 'utf8')}\n${readFileSync(join(scripts, `${name}.lua`), 'utf8')}`).digest('hex');

let cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of cleanup.reverse()) await close().catch(() => undefined);
  cleanup = [];
});

/** A durable private Redis, an admin connection, a tier-2 target (never deduped by key) and a worker on the production client. */
async function setting(): Promise<{ server: PrivateRedis; admin: Redis; target: MemoryTarget; worker: TestNode; client: Redis; prefix: string }> {
  const server = await startPrivateRedis(SAFE);
  cleanup.push(() => server.stop());
  const admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
  admin.on('error', () => undefined);
  cleanup.push(async () => admin.disconnect());
  const target = createMemoryTarget({ tier: 2 });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  // Durability checked (not opted out), and a check interval no test waits out: only the scripts can find the loss.
  const prefix = `nowin${Date.now()}`;
  const config = testConfig({ redisUrl: server.url, unsafeDurability: false, durabilityCheckMs: 600_000, keyPrefix: prefix });
  const client = createRedisClient(config) as Redis;
  client.on('error', () => undefined);
  const worker = await startNode({ config, target, key: testKey().key, redis: client });
  cleanup.push(() => worker.close());
  return { server, admin, target, worker, client, prefix };
}

/** What a submit came to: its outcome, or the code and message of what it threw. */
function outcomeOf(submitted: Promise<{ outcome: string }>): Promise<{ outcome: string } | { code: string; message: string }> {
  return submitted.then(
    (result) => ({ outcome: result.outcome }),
    (error: unknown) => ({ code: String((error as { code?: unknown }).code), message: (error as Error).message }),
  );
}

describe('data loss under a running worker, inside one durability-check interval', () => {
  it('after FLUSHALL the same request is refused as the monitor refuses a loss, and the monitor records it at once', async () => {
    const { admin, target, worker, prefix } = await setting();
    const terms = approvalTerms();
    await worker.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    expect((await worker.gate.submit(proposal)).outcome).toBe('COMMITTED');
    expect(target.landings).toHaveLength(1);

    await admin.flushall();
    // Someone puts the approval back from their own records; the journal of the committed refund is gone for good.
    await createRedisApprovals({ redis: admin, keys: createKeys(prefix) }).grant(terms);
    expect(worker.durabilityMonitor.dataLoss()).toBeNull();
    const again = await outcomeOf(worker.gate.submit(proposal));
    expect({ again, landings: target.landings.length }).toEqual({ again: { code: 'redis_not_durable', message: expect.stringContaining(LOST) }, landings: 1 });
    // Recorded by the monitor in the same turn: every later call refuses in the same words.
    expect(worker.durabilityMonitor.dataLoss()).toContain(LOST);
    expect(() => worker.durabilityMonitor.assertDurable()).toThrow(('message' in again ? again.message : '').replace(/ \(last checked .*$/, ''));
    const later = await outcomeOf(worker.gate.submit(refundProposal({ approval: terms.id })));
    expect(later).toEqual({ code: 'redis_not_durable', message: expect.stringContaining(LOST) });
    expect(target.landings).toHaveLength(1);
  });

  it('after Redis restarts without its append-only file the same request is refused', async () => {
    const { server, admin, target, worker, prefix } = await setting();
    const terms = approvalTerms();
    await worker.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    expect((await worker.gate.submit(proposal)).outcome).toBe('COMMITTED');
    await server.kill('SIGKILL');
    rmSync(join(server.dir, 'appendonlydir'), { recursive: true, force: true });
    await server.restart();
    // The worker's connection comes back to an empty Redis; the approval is put back.
    let granted = false;
    for (let i = 0; i < 50 && !granted; i += 1) granted = await createRedisApprovals({ redis: admin, keys: createKeys(prefix) }).grant(terms).then(() => true, async () => { await sleep(100); return false; });
    expect(granted).toBe(true);
    const again = await outcomeOf(worker.gate.submit(proposal));
    expect({ again, landings: target.landings.length }).toEqual({ again: { code: 'redis_not_durable', message: expect.any(String) }, landings: 1 });
  });

  it('a reconnect to a Redis that lost its data is found by the re-check the reconnect starts, not a check interval later', async () => {
    const { server, worker } = await setting();
    await server.kill('SIGKILL');
    rmSync(join(server.dir, 'appendonlydir'), { recursive: true, force: true });
    await server.restart();
    // The check interval is 10 minutes: only the check the reconnect starts can find the loss.
    for (let i = 0; i < 200 && worker.durabilityMonitor.dataLoss() === null; i += 1) await sleep(50);
    expect(worker.durabilityMonitor.dataLoss()).toContain(LOST);
  });

  it('after a dropped connection comes back nothing is sent until the re-check has answered, then sending resumes', async () => {
    const { admin, target, worker, client } = await setting();
    const terms = approvalTerms();
    await worker.approvals.grant(terms);
    const id = await client.client('ID');
    let atReady: unknown = null;
    let readiness: Promise<Durability> | null = null;
    const ready = new Promise<void>((resolve) => {
      client.once('ready', () => {
        try {
          worker.durabilityMonitor.assertDurable();
          atReady = 'durable';
        } catch (error) {
          atReady = error;
        }
        // What /readyz and the durability gauge read at that moment: not durable either, saying why.
        readiness = durabilityOf(worker.stores);
        resolve();
      });
    });
    await admin.client('KILL', 'ID', String(id));
    await ready;
    expect(atReady).toMatchObject({ code: 'redis_not_durable', message: expect.stringContaining('dropped and came back') });
    expect(await readiness).toMatchObject({ durable: false, optedOut: false, problems: [expect.stringContaining('dropped and came back')] });
    let durable = false;
    for (let i = 0; i < 200 && !durable; i += 1) {
      durable = (() => {
        try {
          worker.durabilityMonitor.assertDurable();
          return true;
        } catch {
          return false;
        }
      })();
      if (!durable) await sleep(50);
    }
    expect(durable).toBe(true);
    expect((await worker.gate.submit(refundProposal({ approval: terms.id }))).outcome).toBe('COMMITTED');
    expect(target.landings).toHaveLength(1);
  });

  it('a submit whose binding is from an earlier attempt binds again, marker checked, before it starts an emptied chain', async () => {
    const { admin, target, worker, client, prefix } = await setting();
    const terms = approvalTerms();
    await worker.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    expect((await worker.gate.submit(proposal)).outcome).toBe('COMMITTED');
    const approvalKey = createKeys(prefix).approval('payment:pi_1', terms.id);
    const approval = await admin.dumpBuffer(approvalKey);

    // The submit again: its dispatch step binds (BOUND) and answers COMMITTED, so it reads the chain again under that
    // binding. Right after that step, and before anything else of the worker reaches Redis, Redis loses its data and
    // the approval is put back.
    const original = client.sendCommand.bind(client) as (command: Command, ...rest: unknown[]) => unknown;
    const dispatchStep = sha('bind-propose-10');
    let armed = true;
    let hold: Promise<void> | null = null;
    client.sendCommand = ((command: Command, ...rest: unknown[]) => {
      if (hold !== null) {
        void hold.then(() => {
          // The caller awaits the command's own promise.
          void original(command, ...rest);
        });
        return command.promise;
      }
      const sent = original(command, ...rest);
      if (armed && command.name === 'evalsha' && command.args[0] === dispatchStep) {
        armed = false;
        hold = command.promise
          .then(async () => {
            await admin.flushall();
            await admin.restore(approvalKey, 0, approval);
          })
          .finally(() => {
            hold = null;
          });
      }
      return sent;
    }) as typeof client.sendCommand;

    const again = await outcomeOf(worker.gate.submit(proposal));
    expect(armed).toBe(false);
    expect({ again, landings: target.landings.length }).toEqual({ again: { code: 'redis_not_durable', message: expect.stringContaining(LOST) }, landings: 1 });
  });
});
