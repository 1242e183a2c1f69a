// Rule: INTERLOCK_REDIS_CLUSTER must say what REDIS_URL's server is for every command, not only `serve` (README
// "Configuration": a wrong setting is named, exit 2). A one-shot command given the flag against a standalone Redis
// failed with the cluster client's own "Failed to refresh slots cache" and advice to start Redis; left unset against a
// node of a cluster, it read and wrote through a one-server client the cluster refuses key by key. Each now checks the
// server once, as it opens its stores, and exits 2 with serve's sentence naming INTERLOCK_REDIS_CLUSTER, having read
// and written nothing.
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PrivateRedis } from '../support/private-redis.js';
import { startStandaloneAndClusterNode } from '../support/private-cluster.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('cli-cluster-flag');
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

const env = (redisUrl: string, cluster: '0' | '1') => ({ REDIS_URL: redisUrl, INTERLOCK_REDIS_CLUSTER: cluster, INTERLOCK_KEY_PREFIX: 'cliclusterflag', INTERLOCK_DATA_DIR: join(temp.dir, 'data') });

/** One command that reads, one that writes and one that reads the inbox: each opens its stores through the same path. */
const COMMANDS: readonly (readonly string[])[] = [
  ['effect', 'show', 'a'.repeat(64)],
  ['inbox', 'list'],
  ['approvals', 'describe', 'ap_cluster_flag'],
  ['approvals', 'grant', '--id', 'ap_cluster_flag', '--approver', 'dana', '--cap-cents', '2000', '--scope', 'payment:pi_clusterflag'],
];

async function keysIn(server: PrivateRedis): Promise<number> {
  const redis = new Redis(server.url);
  try {
    return await redis.dbsize();
  } finally {
    await redis.quit();
  }
}

describe('a one-shot command whose INTERLOCK_REDIS_CLUSTER does not fit the Redis at REDIS_URL', { timeout: 120_000 }, () => {
  it.each(COMMANDS)('set, against a standalone Redis: %s %s exits 2 naming INTERLOCK_REDIS_CLUSTER, nothing written', async (...args) => {
    const run = await runCli(args, env(standalone.url, '1'), { timeoutMs: 40_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`INTERLOCK_REDIS_CLUSTER is set, but the Redis at ${standalone.url} is not a node of a Redis Cluster (its INFO says cluster_enabled:0`);
    expect(run.stderr).toContain('so this command did not run');
    expect(run.stderr).not.toContain('slots cache');
    expect(run.stderr.trimEnd().split('\n'), run.stderr).toHaveLength(1);
    expect(run.stdout).toBe('');
    expect(await keysIn(standalone)).toBe(0);
  });

  it.each(COMMANDS)('unset, against a node of a cluster: %s %s exits 2 saying to set INTERLOCK_REDIS_CLUSTER=1, nothing written', async (...args) => {
    const run = await runCli(args, env(clusterNode.url, '0'), { timeoutMs: 40_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`The Redis at ${clusterNode.url} is a node of a Redis Cluster (its INFO says cluster_enabled:1), but INTERLOCK_REDIS_CLUSTER is not set, so this command did not run`);
    expect(run.stderr).toContain('Set INTERLOCK_REDIS_CLUSTER=1.');
    expect(run.stderr.trimEnd().split('\n'), run.stderr).toHaveLength(1);
    expect(run.stdout).toBe('');
    expect(await keysIn(clusterNode)).toBe(0);
  });

  it('matching the server: a command runs as usual', async () => {
    const run = await runCli(['approvals', 'describe', 'ap_nobody'], env(standalone.url, '0'), { timeoutMs: 40_000 });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain('No approval ap_nobody');
  });
});
