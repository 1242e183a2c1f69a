// Rule (redis/durability.ts inspectDurability, redis/client.ts writableNodesNow): the durability of a Redis Cluster is
// read on the masters the cluster has now, from its slot map, not on the masters the client happens to hold
// connections to. A new cluster client knows only its seed until its slots are loaded: createInterlock, which checks
// before any command, read the seed alone and started on a cluster whose other masters keep nothing on disk. A client
// whose master failed over keeps the survivors until a command is MOVED: the monitor read those alone and kept saying
// durable while a replica with no append-only file served the dead master's slots.
import { Cluster, Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInterlock } from '../../src/interlock.js';
import { createDurabilityMonitor } from '../../src/redis/durability.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { testConfig, testKey } from '../support/harness.js';
import type { PrivateRedis } from '../support/private-redis.js';
import { startCluster } from '../support/private-cluster.js';

const DURABLE = ['--appendonly', 'yes', '--appendfsync', 'always', '--cluster-node-timeout', '1000'];
const LAX = ['--appendonly', 'no', '--cluster-node-timeout', '1000'];

describe('a cluster whose seed is durable and whose other masters are not', () => {
  let servers: PrivateRedis[] = [];
  beforeAll(async () => {
    servers = await startCluster([DURABLE, LAX, LAX]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('is refused by createInterlock, which checks before any command', async () => {
    const config = testConfig({ redisUrl: servers[0]?.url ?? '', redisCluster: true, unsafeDurability: false });
    const started = createInterlock({ config, target: createMemoryTarget({ tier: 1, sendTimeoutMs: 1_000 }), signingKey: testKey().key, logger: pino({ level: 'silent' }) });
    try {
      await expect(started).rejects.toMatchObject({ name: 'DurabilityError', message: expect.stringContaining('append-only file is off') });
    } finally {
      await (await started.catch(() => null))?.close();
    }
  });
});

describe('a master that fails over to a replica with no append-only file', () => {
  let servers: PrivateRedis[] = [];
  beforeAll(async () => {
    // The first three are masters, the last three their replicas.
    servers = await startCluster([DURABLE, DURABLE, DURABLE, LAX, LAX, LAX], 1);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('makes the running monitor read the promoted replica and say Redis is not durable', async () => {
    const client = new Cluster([{ host: '127.0.0.1', port: servers[0]?.port ?? 0 }], { redisOptions: { maxRetriesPerRequest: 2 } });
    client.on('error', () => undefined);
    const monitor = createDurabilityMonitor({ redis: client, optOut: false, intervalMs: 500, logger: pino({ level: 'silent' }), checkTimeoutMs: 6_000 });
    const admin = new Redis(servers[0]?.url ?? '');
    try {
      await client.ping();
      expect((await monitor.check()).durable).toBe(true);
      // A replica takes over only once it has synced with its master.
      const synced = Date.now() + 30_000;
      for (const replica of servers.slice(3)) {
        const probe = new Redis(replica.url);
        try {
          while (!String(await probe.info('replication')).includes('master_link_status:up')) {
            if (Date.now() > synced) throw new Error(`replica ${replica.port} never synced`);
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        } finally {
          probe.disconnect();
        }
      }
      const victim = servers.find((server) => server.port !== servers[0]?.port && client.nodes('master').some((node) => node.options.port === server.port));
      await victim?.kill('SIGKILL');
      // The failover is over once the victim is marked failed and three other masters serve the slots.
      const giveUp = Date.now() + 45_000;
      const failedOver = async () => {
        const lines = String(await admin.cluster('NODES')).split('\n').map((line) => ({ address: line.split(' ')[1] ?? '', flags: (line.split(' ')[2] ?? '').split(',') }));
        const victimFailed = lines.some((line) => line.address.startsWith(`127.0.0.1:${victim?.port ?? 0}@`) && line.flags.includes('fail'));
        const masters = lines.filter((line) => line.flags.includes('master') && !line.flags.includes('fail') && !line.flags.includes('fail?')).length;
        return victimFailed && masters === 3 && String(await admin.cluster('INFO')).includes('cluster_state:ok');
      };
      while (!(await failedOver())) {
        if (Date.now() > giveUp) throw new Error(`no failover within 45 s: ${String(await admin.cluster('NODES'))}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const reading = await monitor.check();
      expect(reading.durable).toBe(false);
      expect(reading.problems.join(' ')).toContain('append-only file is off');
    } finally {
      admin.disconnect();
      await monitor.stop();
      client.disconnect();
    }
  }, 90_000);
});
