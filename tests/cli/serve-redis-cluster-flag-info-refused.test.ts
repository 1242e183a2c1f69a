// Rule: INTERLOCK_REDIS_CLUSTER must say what REDIS_URL's server is, also when REDIS_URL's user may not run INFO (an
// ACL `-info`, common on managed Redis). The start's probe read only `INFO cluster` and, refused, said nothing: serve
// with the flag set against a standalone Redis exited 2 with "Cannot reach Redis ... Failed to refresh slots cache ...
// Start Redis or set REDIS_URL", advice that does not fit a Redis it reached. Refused INFO, it asks CLUSTER INFO (a
// standalone Redis answers "cluster support disabled") and the start exits 2 naming INTERLOCK_REDIS_CLUSTER.
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterModeProblem } from '../../src/redis/client.js';
import type { PrivateRedis } from '../support/private-redis.js';
import { startStandaloneAndClusterNode } from '../support/private-cluster.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('serve-cluster-flag-no-info');
let standalone: PrivateRedis;
let clusterNode: PrivateRedis;
let servers: Awaited<ReturnType<typeof startStandaloneAndClusterNode>> | undefined;

/** REDIS_URL for a user of `server` that may run everything but INFO. */
const noInfo = (server: PrivateRedis) => server.url.replace('redis://', 'redis://app:pw@');

beforeAll(async () => {
  servers = await startStandaloneAndClusterNode();
  ({ standalone, clusterNode } = servers);
  for (const server of [standalone, clusterNode]) {
    const admin = new Redis(server.url);
    await admin.call('ACL', 'SETUSER', 'app', 'on', '>pw', '~*', '&*', '+@all', '-info');
    await admin.quit();
  }
});

afterAll(async () => {
  await servers?.stop();
  temp.remove();
});

describe('INTERLOCK_REDIS_CLUSTER against a Redis whose INFO the user may not run', { timeout: 60_000 }, () => {
  it('set, against a standalone Redis: serve exits 2 naming INTERLOCK_REDIS_CLUSTER, not "Cannot reach Redis"', async () => {
    const env = { REDIS_URL: noInfo(standalone), INTERLOCK_REDIS_CLUSTER: '1', INTERLOCK_KEY_PREFIX: 'clusterflagnoinfo', INTERLOCK_DATA_DIR: join(temp.dir, 'data'), INTERLOCK_PORT: '0', STRIPE_SECRET_KEY: 'sk_test_clusterflagnoinfo', STRIPE_API_BASE: 'http://127.0.0.1:1' };
    const run = await runCli(['serve', '--roles', 'api'], env, { timeoutMs: 40_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('INTERLOCK_REDIS_CLUSTER is set, but the Redis at');
    expect(run.stderr).toContain('is not a node of a Redis Cluster (it answers CLUSTER INFO with "ERR This instance has cluster support disabled")');
    expect(run.stderr).not.toContain('Cannot reach Redis');
  });

  it('unset, against a node of a cluster: the start is refused saying to set INTERLOCK_REDIS_CLUSTER=1', async () => {
    const problem = await clusterModeProblem({ redisUrl: noInfo(clusterNode), redisCluster: false }, 'the node');
    expect(problem).toBe('The Redis at the node is a node of a Redis Cluster (it answers CLUSTER INFO), but INTERLOCK_REDIS_CLUSTER is not set, so the service did not start: a client of one server would be refused every key another node serves. Set INTERLOCK_REDIS_CLUSTER=1.');
  });

  it('matching the server: no problem either way', async () => {
    expect(await clusterModeProblem({ redisUrl: noInfo(standalone), redisCluster: false }, 'x')).toBeNull();
    expect(await clusterModeProblem({ redisUrl: noInfo(clusterNode), redisCluster: true }, 'x')).toBeNull();
  });
});
