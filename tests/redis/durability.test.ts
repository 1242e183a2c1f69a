// Issue 6, items 13 and 14. A Redis that evicts keys, or that stops fsyncing during an AOF rewrite, is refused like
// one without AOF; and durability is re-checked while the worker runs, so a `CONFIG SET appendonly no` under a
// live worker stops it dispatching. Every server here is private (the shared Redis is never reconfigured).
import { Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDurabilityMonitor, DurabilityError, inspectDurability, requireDurability, type CheckedDurability } from '../../src/redis/durability.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { approvalTerms, refundProposal, sleep, startNode, testConfig, testKey } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const SAFE = ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--no-appendfsync-on-rewrite', 'no'];

/** SAFE with one setting changed: redis-server takes the last value given for a repeated option. */
const safeExcept = (...args: string[]): string[] => [...SAFE, ...args];

const servers: PrivateRedis[] = [];
const clients: Redis[] = [];

async function server(args: string[]): Promise<{ redis: PrivateRedis; client: Redis }> {
  const redis = await startPrivateRedis(args);
  servers.push(redis);
  const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  // A killed server is part of one test; its refused reconnects are expected, and the monitor reports them.
  client.on('error', () => undefined);
  clients.push(client);
  return { redis, client };
}

afterAll(async () => {
  for (const client of clients) client.disconnect();
  await Promise.all(servers.map((redis) => redis.stop()));
});

function refusal(run: () => Promise<unknown>): Promise<DurabilityError> {
  return run().then(
    () => {
      throw new Error('the durability check accepted an unsafe Redis');
    },
    (error: unknown) => {
      if (error instanceof DurabilityError) return error;
      throw error;
    },
  );
}

describe('the durability check at start', () => {
  it('accepts appendonly yes, appendfsync always, no-appendfsync-on-rewrite no and maxmemory-policy noeviction', async () => {
    const { client } = await server(SAFE);
    expect(await inspectDurability(client, false)).toEqual({ durable: true, appendonly: 'yes', appendfsync: 'always', maxmemoryPolicy: 'noeviction', noAppendfsyncOnRewrite: 'no', problems: [], optedOut: false });
  });

  it('requires maxmemory-policy noeviction: refuses a Redis started with allkeys-lru, saying what to set or how to opt out', async () => {
    const { client } = await server(safeExcept('--maxmemory-policy', 'allkeys-lru'));
    const error = await refusal(() => requireDurability(client, false));
    expect(error.durability).toMatchObject({ durable: false, maxmemoryPolicy: 'allkeys-lru' });
    expect(error.durability.problems).toEqual(['maxmemory-policy is allkeys-lru, not noeviction, so Redis may evict a journal and a committed request would commit again']);
    expect(error.code).toBe('redis_not_durable');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('`maxmemory-policy noeviction`');
    expect(error.message).toContain('INTERLOCK_UNSAFE_DURABILITY=1');
  });

  it('requires maxmemory-policy noeviction: also refuses volatile policies, which evict claims and heartbeats', async () => {
    const { client } = await server(safeExcept('--maxmemory-policy', 'volatile-ttl'));
    expect((await inspectDurability(client, false)).problems).toEqual([expect.stringContaining('maxmemory-policy is volatile-ttl, not noeviction')]);
  });

  it('refuses no-appendfsync-on-rewrite yes: entries acknowledged during a rewrite may never reach the disk', async () => {
    const { client } = await server(safeExcept('--no-appendfsync-on-rewrite', 'yes'));
    const error = await refusal(() => requireDurability(client, false));
    expect(error.durability.problems).toEqual([expect.stringContaining('no-appendfsync-on-rewrite is yes, not no')]);
    expect(error.message).toContain('`no-appendfsync-on-rewrite no`');
  });

  it('keeps the opt-out: with INTERLOCK_UNSAFE_DURABILITY a worker starts on such a Redis and the reading says it opted out', async () => {
    const { client } = await server(safeExcept('--maxmemory-policy', 'allkeys-lru', '--no-appendfsync-on-rewrite', 'yes'));
    const durability = await requireDurability(client, true);
    expect(durability).toMatchObject({ durable: false, optedOut: true });
    expect(durability.problems).toHaveLength(2);
  });

  it('on a Redis whose CONFIG command is disabled (a managed Redis) says the settings could not be read, what Redis answered and what to do, instead of calling them unsafe', async () => {
    const { client } = await server(safeExcept('--rename-command', 'CONFIG', ''));
    const error = await refusal(() => requireDurability(client, false));
    expect(error.durability).toMatchObject({ appendonly: 'yes', appendfsync: 'unknown', maxmemoryPolicy: 'noeviction' });
    expect(error.durability.problems).toEqual([expect.stringMatching(/^could not read appendfsync, no-appendfsync-on-rewrite: CONFIG GET failed \(ERR unknown command 'config'/)]);
    expect(error.message).not.toContain('appendfsync is unknown');
    expect(error.message).toContain('CONFIG GET');
    expect(error.message).toContain('+config|get');
  });

  it('names the missing ACL permission when the Redis user may not run CONFIG GET', async () => {
    const { redis } = await server(SAFE);
    const admin = new Redis(redis.url);
    await admin.acl('SETUSER', 'interlock-app', 'on', '>pw', '~*', '&*', '+@all', '-config');
    await admin.quit();
    const client = new Redis(`redis://interlock-app:pw@127.0.0.1:${redis.port}`, { maxRetriesPerRequest: 1 });
    clients.push(client);
    const { problems } = await inspectDurability(client, false);
    expect(problems).toEqual([expect.stringMatching(/^could not read appendfsync, no-appendfsync-on-rewrite: CONFIG GET failed \(NOPERM/)]);
  });

  it('refuses a replica, even a writable one, naming its master: a full resync from the master wipes the journal written on it, and a committed request commits again', async () => {
    const { redis: primary } = await server([...SAFE, '--repl-diskless-sync-delay', '0']);
    const { redis: replica, client } = await server([...SAFE, '--replica-read-only', 'no', '--replicaof', '127.0.0.1', String(primary.port)]);
    const error = await refusal(() => requireDurability(client, false));
    expect(error.durability.problems).toEqual([`this server is a replica of 127.0.0.1:${primary.port}: what is written on a replica is lost when it resyncs from its master (a read-only one refuses it). Point REDIS_URL at the master`]);
    const config = testConfig({ redisUrl: replica.url, unsafeDurability: false });
    const started = await refusal(() => startNode({ config, target: createMemoryTarget({ tier: 1 }), key: testKey().key, redis: new Redis(replica.url, { maxRetriesPerRequest: 1 }) }));
    expect(started.message).toContain('Point REDIS_URL at the master');
  });

  it('createInterlock refuses to start a worker on an evicting Redis without the opt-out', async () => {
    const { redis } = await server(safeExcept('--maxmemory-policy', 'allkeys-lru'));
    const config = testConfig({ redisUrl: redis.url, unsafeDurability: false });
    const error = await refusal(() => startNode({ config, target: createMemoryTarget({ tier: 1 }), key: testKey().key, redis: new Redis(redis.url, { maxRetriesPerRequest: 1 }) }));
    expect(error.message).toContain('maxmemory-policy is allkeys-lru');
  });
});

describe('why the gate requires maxmemory-policy noeviction', () => {
  let lru: { redis: PrivateRedis; client: Redis };
  beforeAll(async () => {
    lru = await server(['--save', '', '--appendonly', 'no', '--maxmemory-policy', 'allkeys-lru']);
  });

  it('with allkeys-lru Redis evicts the journal of a committed refund under memory pressure, and the same request commits and lands a second time', async () => {
    const { client } = lru;
    // The operator opted out, the only way a worker runs on this Redis; the target is tier 2 (it does not dedupe).
    // No durability check runs during the test: what stops the worker here is the marker the bindings check.
    const config = testConfig({ redisUrl: lru.redis.url, unsafeDurability: true, durabilityCheckMs: 600_000 });
    const target = createMemoryTarget({ tier: 2, sendTimeoutMs: config.sendTimeoutMs });
    const node = await startNode({ config, target, key: testKey().key, redis: new Redis(lru.redis.url, { maxRetriesPerRequest: 1 }) });
    try {
      target.world.set('payment:pi_evict', { chargebacks: [], refunded_by_others: 0 });
      const terms = approvalTerms({ scope: 'payment:pi_evict', maxUses: 2 });
      await node.approvals.grant(terms);
      const proposal = refundProposal({ approval: terms.id, paymentIntent: 'pi_evict' });
      const first = await node.gate.submit(proposal);
      expect(first.outcome).toBe('COMMITTED');
      expect((await node.gate.submit(proposal)).outcome).toBe('DUPLICATE_IGNORED');

      // Everything the gate wrote, except the heartbeat it keeps refreshing.
      const written = (await client.keys(`${config.keyPrefix}:*`)).filter((key) => !key.includes(':heartbeat:'));
      const markerKey = `${config.keyPrefix}:{~index}:deployment`;
      const marker = await client.get(markerKey);
      expect(written.some((key) => key.includes(first.effectId))).toBe(true);
      // Redis's LRU clock ticks once a second: let the gate's keys age past the filler's before memory runs out.
      await sleep(1_100);
      const used = Number(/used_memory:(\d+)/.exec(String(await client.info('memory')))?.[1]);
      await client.config('SET', 'maxmemory', String(used + 2 * 1024 * 1024));
      // Fill memory until every key the gate wrote is gone. EXISTS does not touch a key's LRU clock. The bound
      // only turns a Redis that never evicts into a clear failure; eviction usually finishes within a few MB.
      const filler = 'x'.repeat(16 * 1024);
      let batches = 0;
      while ((await client.exists(...written)) > 0) {
        batches += 1;
        if (batches > 2_000) throw new Error(`${await client.exists(...written)} of the gate's keys survived 500 MB of filler under allkeys-lru`);
        const pipeline = client.pipeline();
        for (let i = 0; i < 16; i += 1) pipeline.set(`filler:${batches}:${i}`, filler);
        await pipeline.exec();
      }
      // The memory pressure is over (the operator raised the limit), so nothing more is evicted from here on.
      await client.config('SET', 'maxmemory', '0');
      // The deployment marker went with the rest, and every binding would refuse (tests/redis/data-loss-no-window.test.ts);
      // an LRU Redis may as well keep it (every binding reads it) while it evicts a journal: that case is put back here.
      await client.set(markerKey, String(marker));

      // The approval was evicted too; it is granted again with the same terms, as an operator would on a retry.
      await node.approvals.grant(terms);
      const again = await node.gate.submit(proposal);
      expect(again.effectId).toBe(first.effectId);
      expect(again.outcome).toBe('COMMITTED');
      expect(target.landedCount(first.effectId)).toBe(2);
      // The check the gate now runs at start refuses this Redis unless the operator opts out.
      expect((await inspectDurability(client, false)).problems).toContainEqual(expect.stringContaining('maxmemory-policy is allkeys-lru, not noeviction'));
    } finally {
      await node.close();
    }
  }, 60_000);
});

type LogLine = { level: number; msg: string; was?: string; durability?: CheckedDurability };

function memoryLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger: Logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as LogLine) });
  return { logger, lines };
}

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<number> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await sleep(10);
  }
  return Date.now() - started;
}

describe('the durability monitor', () => {
  const INTERVAL = 200;
  // Slack for a loaded machine (the suite shares two cores); the monitor itself needs at most about two intervals.
  const SLACK = 1_500;
  // Long enough that a slow answer on a loaded machine is not read as an unreachable Redis.
  const CHECK_TIMEOUT = 5_000;

  it('stops dispatching within a couple of intervals after CONFIG SET appendonly no, logs the change once, and resumes when it is set back', async () => {
    const { redis, client } = await server(SAFE);
    const { logger, lines } = memoryLogger();
    const initial = await requireDurability(client, false);
    const monitor = createDurabilityMonitor({ redis: client, optOut: false, intervalMs: INTERVAL, logger, initial, checkTimeoutMs: CHECK_TIMEOUT });
    monitor.start();
    try {
      expect(() => monitor.assertDurable()).not.toThrow();
      const admin = new Redis(redis.url);
      clients.push(admin);
      await admin.config('SET', 'appendonly', 'no');
      const took = await until(() => !monitor.current().durable, 2 * INTERVAL + SLACK, 'the monitor noticing appendonly no');
      expect(took).toBeLessThan(2 * INTERVAL + SLACK);
      const error = (() => {
        try {
          monitor.assertDurable();
        } catch (thrown) {
          return thrown;
        }
        return null;
      })();
      expect(error).toBeInstanceOf(DurabilityError);
      expect(error).toMatchObject({ code: 'redis_not_durable', retryable: true });
      expect((error as DurabilityError).message).toContain('Redis is not durable now (append-only file is off');
      expect((error as DurabilityError).message).toContain('nothing was sent');

      await sleep(3 * INTERVAL);
      const lost = lines.filter((line) => line.msg.startsWith('Redis is no longer durable'));
      expect(lost).toHaveLength(1);
      expect(lost[0]).toMatchObject({ level: 50, was: 'durable' });
      expect(lost[0]?.msg).toContain('append-only file is off');

      await admin.config('SET', 'appendonly', 'yes');
      await until(() => monitor.current().durable, 2 * INTERVAL + SLACK, 'the monitor noticing appendonly yes');
      expect(() => monitor.assertDurable()).not.toThrow();
      await sleep(3 * INTERVAL);
      expect(lines.filter((line) => line.msg.startsWith('Redis is durable again'))).toEqual([expect.objectContaining({ level: 30, was: 'not_durable' })]);
      expect(lines).toHaveLength(2);
    } finally {
      await monitor.stop();
    }
  });

  it('reads an unreachable Redis as unknown and not durable, without crashing, and recovers when it answers again', async () => {
    const { redis, client } = await server(SAFE);
    const { logger, lines } = memoryLogger();
    const monitor = createDurabilityMonitor({ redis: client, optOut: false, intervalMs: INTERVAL, logger, initial: await requireDurability(client, false), checkTimeoutMs: 500 });
    monitor.start();
    try {
      await redis.kill('SIGKILL');
      await until(() => monitor.current().checkError !== null, 10_000, 'the monitor noticing Redis is gone');
      expect(monitor.current()).toMatchObject({ durable: false, appendonly: 'unknown' });
      expect(() => monitor.assertDurable()).toThrow(DurabilityError);
      expect(lines.filter((line) => line.msg.startsWith('Could not check Redis durability'))).toEqual([expect.objectContaining({ level: 50, was: 'durable' })]);

      await redis.restart();
      await until(() => monitor.current().durable, 15_000, 'the monitor seeing Redis durable again');
      expect(() => monitor.assertDurable()).not.toThrow();
      expect(lines.filter((line) => line.msg.startsWith('Could not check Redis durability'))).toHaveLength(1);
    } finally {
      await monitor.stop();
    }
  }, 40_000);

  it('stops at once while a check waits on a Redis that does not answer: the reading it drops is not waited for (a stopping service is not held for the check timeout)', async () => {
    const { redis, client } = await server(SAFE);
    const { logger, lines } = memoryLogger();
    const monitor = createDurabilityMonitor({ redis: client, optOut: false, intervalMs: 60_000, logger, initial: await requireDurability(client, false), checkTimeoutMs: CHECK_TIMEOUT });
    monitor.start();
    redis.process.kill('SIGSTOP');
    try {
      const reading = monitor.check();
      const stopped = await Promise.race([monitor.stop().then(() => 'stopped' as const), sleep(CHECK_TIMEOUT / 2).then(() => 'still waiting' as const)]);
      expect(stopped).toBe('stopped');
      redis.process.kill('SIGCONT');
      // The dropped reading still ends (Redis answers again), and says nothing: it was begun before the stop.
      expect((await reading).durable).toBe(true);
      expect(lines).toEqual([]);
    } finally {
      redis.process.kill('SIGCONT');
    }
  });

  it('with the opt-out never throws, but still logs the change as a warning', async () => {
    const { client } = await server(SAFE);
    const { logger, lines } = memoryLogger();
    const monitor = createDurabilityMonitor({ redis: client, optOut: true, intervalMs: INTERVAL, logger, initial: await requireDurability(client, true), checkTimeoutMs: CHECK_TIMEOUT });
    monitor.start();
    try {
      await client.config('SET', 'maxmemory-policy', 'allkeys-lru');
      await until(() => monitor.current().maxmemoryPolicy === 'allkeys-lru', 2 * INTERVAL + SLACK, 'the monitor noticing allkeys-lru');
      expect(() => monitor.assertDurable()).not.toThrow();
      expect(monitor.current()).toMatchObject({ optedOut: true, maxmemoryPolicy: 'allkeys-lru' });
      expect(lines).toEqual([expect.objectContaining({ level: 40, msg: expect.stringContaining('sending anyway because INTERLOCK_UNSAFE_DURABILITY is set') })]);
    } finally {
      await monitor.stop();
    }
  });

  it('is not durable before its first check when it starts without a reading, and logs what the first check found', async () => {
    const { client } = await server(SAFE);
    const { logger, lines } = memoryLogger();
    const monitor = createDurabilityMonitor({ redis: client, optOut: false, intervalMs: 60_000, logger });
    expect(() => monitor.assertDurable()).toThrow(DurabilityError);
    monitor.start();
    try {
      await until(() => monitor.current().durable, 5_000, 'the first check');
      expect(() => monitor.assertDurable()).not.toThrow();
      expect(lines).toEqual([expect.objectContaining({ level: 30, msg: expect.stringMatching(/^Redis is durable \(appendonly yes, appendfsync always, maxmemory-policy noeviction\); dispatching may proceed$/) })]);
    } finally {
      await monitor.stop();
    }
  });

  it('createInterlock starts the monitor on the configured interval and stops it on close', async () => {
    const { redis, client } = await server(SAFE);
    const config = testConfig({ redisUrl: redis.url, unsafeDurability: false, durabilityCheckMs: INTERVAL });
    const node = await startNode({ config, target: createMemoryTarget({ tier: 1 }), key: testKey().key, redis: new Redis(redis.url, { maxRetriesPerRequest: 1 }) });
    try {
      expect(node.durabilityMonitor.current()).toMatchObject({ durable: true, checkError: null });
      await client.config('SET', 'appendfsync', 'everysec');
      await until(() => node.durabilityMonitor.current().appendfsync === 'everysec', 2 * INTERVAL + SLACK, 'the worker noticing appendfsync everysec');
      expect(() => node.durabilityMonitor.assertDurable()).toThrow('appendfsync is everysec, not always');
    } finally {
      await node.close();
    }
    const checkedAt = node.durabilityMonitor.current().checkedAt;
    await sleep(3 * INTERVAL);
    expect(node.durabilityMonitor.current().checkedAt).toBe(checkedAt);
  });
});
