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
