// Rule: INTERLOCK_REDIS_CLUSTER must say what REDIS_URL's server is (README "Configuration": a setting that is wrong
// stops the start with exit 2 and a sentence naming it). Set against a standalone Redis, `serve` retried the cluster's
// slot map every 10 s for ever; left unset against a node of a cluster, it started a one-server client the cluster
// refuses. Either way the start now exits 2 naming INTERLOCK_REDIS_CLUSTER, and the service's cluster client gives up
// a first slot map it cannot load (a client that was ready once still waits out a cluster that goes away).
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient } from '../../src/redis/client.js';
import type { PrivateRedis } from '../support/private-redis.js';
import { startStandaloneAndClusterNode } from '../support/private-cluster.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('serve-cluster-flag');
let standalone: PrivateRedis;
let clusterNode: PrivateRedis;
let servers: Awaited<ReturnType<typeof startStandaloneAndClusterNode>> | undefined;

beforeAll(async () => {
  servers = await startStandaloneAndClusterNode();
  ({ standalone, clusterNode } = servers);
});

afterAll(async () => {
  await servers?.stop();
  temp.remove();
});

const env = (redisUrl: string, cluster: '0' | '1') => ({
  REDIS_URL: redisUrl,
  INTERLOCK_REDIS_CLUSTER: cluster,
  INTERLOCK_KEY_PREFIX: 'clusterflag',
  INTERLOCK_DATA_DIR: join(temp.dir, 'data'),
  INTERLOCK_PORT: '0',
  STRIPE_SECRET_KEY: 'sk_test_clusterflag',
  STRIPE_API_BASE: 'http://127.0.0.1:1',
});

describe('INTERLOCK_REDIS_CLUSTER and the server REDIS_URL names', { timeout: 60_000 }, () => {
  it('set, against a standalone Redis: serve exits 2 naming INTERLOCK_REDIS_CLUSTER', async () => {
    const run = await runCli(['serve', '--roles', 'api'], env(standalone.url, '1'), { timeoutMs: 40_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`INTERLOCK_REDIS_CLUSTER is set, but the Redis at ${standalone.url} is not a node of a Redis Cluster (its INFO says cluster_enabled:0`);
  });

  it('unset, against a node of a cluster: serve exits 2 saying to set INTERLOCK_REDIS_CLUSTER=1', async () => {
    const run = await runCli(['serve', '--roles', 'api'], env(clusterNode.url, '0'), { timeoutMs: 40_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`The Redis at ${clusterNode.url} is a node of a Redis Cluster (its INFO says cluster_enabled:1), but INTERLOCK_REDIS_CLUSTER is not set`);
    expect(run.stderr).toContain('Set INTERLOCK_REDIS_CLUSTER=1.');
  });

  it("the service's cluster client, whose first slot map cannot be loaded, gives up and fails its commands", { timeout: 20_000 }, async () => {
    const client = createRedisClient({ redisUrl: standalone.url, redisCluster: true, redisCommandTimeoutMs: 5_000 });
    client.on('error', () => undefined);
    try {
      const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
      await expect(client.ping()).rejects.toThrow();
      await ended;
      expect(client.status).toBe('end');
    } finally {
      client.disconnect();
    }
  });
});
