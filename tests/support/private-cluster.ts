// A Redis Cluster of private servers for tests: each node a private redis-server (its own port and directory) with
// cluster mode on, joined by `redis-cli --cluster create`, ready once every node says cluster_state:ok.
import { execFileSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { startPrivateRedis, type PrivateRedis } from './private-redis.js';

/** Waits until every node answers cluster_state:ok. */
export async function clusterReady(ports: readonly number[], timeoutMs = 30_000): Promise<void> {
  const giveUp = Date.now() + timeoutMs;
  for (;;) {
    const states = await Promise.all(ports.map(async (port) => {
      const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
      try {
        await client.connect();
        return String(await client.cluster('INFO')).includes('cluster_state:ok');
      } finally {
        client.disconnect();
      }
    }));
    if (states.every(Boolean)) return;
    if (Date.now() > giveUp) throw new Error('the test cluster did not reach cluster_state:ok');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * A cluster of one node per entry of `perNode` (its own extra redis-server arguments). With `replicas` 1, redis-cli
 * makes the first half masters and the second half their replicas.
 */
export async function startCluster(perNode: readonly (readonly string[])[], replicas: 0 | 1 = 0): Promise<PrivateRedis[]> {
  const servers: PrivateRedis[] = [];
  for (const args of perNode) servers.push(await startPrivateRedis(['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--save', '', ...args]));
  execFileSync('redis-cli', ['--cluster', 'create', ...servers.map((server) => `127.0.0.1:${server.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'], { stdio: 'ignore' });
  await clusterReady(servers.map((server) => server.port));
  return servers;
}

/** Waits until every replica among `servers` has synced with its master (a replica takes over only once it has). */
export async function replicasSynced(servers: readonly PrivateRedis[], timeoutMs = 30_000): Promise<void> {
  const giveUp = Date.now() + timeoutMs;
  const replicas: number[] = [];
  for (const server of servers) {
    const probe = new Redis(server.url);
    try {
      for (;;) {
        const info = String(await probe.info('replication'));
        if (info.includes('role:master')) break;
        if (info.includes('master_link_status:up')) {
          replicas.push(server.port);
          break;
        }
        if (Date.now() > giveUp) throw new Error(`replica ${server.port} never synced with its master`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      probe.disconnect();
    }
  }
  // The first server learns who replicates whom by gossip, after the replicas synced: until then its CLUSTER NODES
  // (what ownerOf reads) shows a replica with no master.
  const admin = new Redis(servers[0]?.url ?? '');
  try {
    for (;;) {
      const lines = await clusterNodes(admin);
      if (replicas.every((port) => (lines.find((line) => line.port === port)?.masterId ?? '-') !== '-')) return;
      if (Date.now() > giveUp) throw new Error(`the first server never saw the masters of replicas ${replicas.join(', ')}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    admin.disconnect();
  }
}

type NodeLine = { id: string; port: number; flags: string[]; masterId: string };

async function clusterNodes(admin: Redis): Promise<NodeLine[]> {
  return String(await admin.cluster('NODES')).split('\n').filter(Boolean).map((line) => {
    const parts = line.split(' ');
    return { id: parts[0] ?? '', port: Number((parts[1] ?? '').split(':')[1]?.split('@')[0]), flags: (parts[2] ?? '').split(','), masterId: parts[3] ?? '-' };
  });
}

/** The port of the master serving `key`'s slot, and the port of its replica (0 when it has none). */
export async function ownerOf(admin: Redis, key: string): Promise<{ master: number; replica: number }> {
  const slot = Number(await admin.cluster('KEYSLOT', key));
  const range = (await admin.cluster('SLOTS')).find(([from, to]) => slot >= from && slot <= to);
  if (range?.[2] === undefined) throw new Error(`no master serves slot ${slot}`);
  const master = Number(range[2][1]);
  const lines = await clusterNodes(admin);
  const masterId = lines.find((line) => line.port === master)?.id;
  return { master, replica: lines.find((line) => line.masterId === masterId)?.port ?? 0 };
}

/** Waits until `victim` is marked failed and three other masters serve every slot (the failover is over). */
export async function failedOver(admin: Redis, victim: number, timeoutMs = 45_000): Promise<void> {
  const giveUp = Date.now() + timeoutMs;
  for (;;) {
    const lines = await clusterNodes(admin);
    const victimFailed = lines.some((line) => line.port === victim && line.flags.includes('fail'));
    const masters = lines.filter((line) => line.flags.includes('master') && !line.flags.includes('fail') && !line.flags.includes('fail?')).length;
    if (victimFailed && masters === 3 && String(await admin.cluster('INFO')).includes('cluster_state:ok')) return;
    if (Date.now() > giveUp) throw new Error(`no failover of ${victim} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The durable settings a service's Redis needs (serve refuses less), for the servers below. */
const DURABLE = ['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--save', ''] as const;

/**
 * A standalone Redis and a lone cluster-mode node (its slots unassigned: `cluster_enabled:1`, nothing served), both
 * durable, for what a process does when INTERLOCK_REDIS_CLUSTER and the server disagree.
 */
export async function startStandaloneAndClusterNode(): Promise<{ standalone: PrivateRedis; clusterNode: PrivateRedis; stop(): Promise<void> }> {
  const [standalone, clusterNode] = await Promise.all([startPrivateRedis(DURABLE), startPrivateRedis([...DURABLE, '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'])]);
  return { standalone, clusterNode, stop: async () => void (await Promise.all([standalone.stop(), clusterNode.stop()])) };
}
