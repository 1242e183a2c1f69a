// Rule: a command that takes its Redis from service.json (REDIS_URL unset) takes the service's cluster setting from it
// too: `serve` writes `redis_cluster` beside `redis_url`, and a command following the file of a service on a Redis
// Cluster runs without INTERLOCK_REDIS_CLUSTER (every command checks the setting against the server before it reads or
// writes, and refused exit 2 "INTERLOCK_REDIS_CLUSTER is not set" there). An INTERLOCK_REDIS_CLUSTER given to the
// command wins, as a given INTERLOCK_KEY_PREFIX does; a file written before it said so names a single Redis; when the
// check refuses, its sentence names the file the URL came from.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnWorker } from '../pipeline/pipeline-support.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('service-json-cluster');
let node: PrivateRedis;

beforeAll(async () => {
  node = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--save', '', '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-announce-ip', '127.0.0.1']);
  const admin = new Redis(node.url);
  try {
    await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
    for (let tries = 0; tries < 50 && !/cluster_state:ok/.test(String(await admin.call('CLUSTER', 'INFO'))); tries += 1) await new Promise((resolve) => setTimeout(resolve, 100));
  } finally {
    admin.disconnect();
  }
}, 60_000);

afterAll(async () => {
  await node?.stop();
  temp.remove();
});

/** A data directory holding a service.json as a stopped service left it (a stopped service's file is followed). */
function stoppedService(name: string, facts: Record<string, unknown>): { dataDir: string; file: string } {
  const dataDir = join(temp.dir, name);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  const file = join(dataDir, 'service.json');
  writeFileSync(file, `${JSON.stringify({ pid: 999_999, redis_url: node.url, key_prefix: `svcjsoncluster${name}`, ...facts, stopped_at: new Date().toISOString() })}\n`, { mode: 0o600 });
  return { dataDir, file };
}

/** Only the data directory: the Redis, its prefix and its cluster setting come from service.json. */
const following = (dataDir: string, extra: Record<string, string | undefined> = {}) => ({ REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined, INTERLOCK_REDIS_CLUSTER: undefined, STRIPE_SECRET_KEY: undefined, STRIPE_API_BASE: undefined, INTERLOCK_DATA_DIR: dataDir, ...extra });

describe('a command that finds a service on a Redis Cluster through service.json', { timeout: 120_000 }, () => {
  it('serve on the cluster writes redis_cluster: true, and a command given only the data directory reaches it', async () => {
    const dataDir = join(temp.dir, 'served');
    const service = spawnWorker({ REDIS_URL: node.url, INTERLOCK_REDIS_CLUSTER: '1', INTERLOCK_KEY_PREFIX: 'svcjsonclusterserved', INTERLOCK_DATA_DIR: dataDir, STRIPE_SECRET_KEY: 'sk_test_svcjsoncluster', STRIPE_API_BASE: 'http://127.0.0.1:1' }, ['serve', '--roles', 'api', '--port', '0']);
    try {
      await service.ready;
      expect(JSON.parse(readFileSync(join(dataDir, 'service.json'), 'utf8'))).toMatchObject({ redis_url: node.url, redis_cluster: true });
      const run = await runCli(['approvals', 'describe', 'ap_svc_json_cluster'], following(dataDir));
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toContain('No approval ap_svc_json_cluster');
      expect(run.stderr).not.toContain('INTERLOCK_REDIS_CLUSTER');
    } finally {
      await service.stop();
    }
  });

  it('a file that says redis_cluster: true is followed with it', async () => {
    const { dataDir } = stoppedService('flagged', { redis_cluster: true });
    const run = await runCli(['approvals', 'describe', 'ap_svc_json_cluster'], following(dataDir));
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain('No approval ap_svc_json_cluster');
  });

  it('an INTERLOCK_REDIS_CLUSTER given to the command wins over the file, and the refusal names the file the URL came from', async () => {
    const { dataDir, file } = stoppedService('overridden', { redis_cluster: true });
    const run = await runCli(['approvals', 'describe', 'ap_svc_json_cluster'], following(dataDir, { INTERLOCK_REDIS_CLUSTER: '0' }));
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`The Redis at ${node.url} (from ${file}) is a node of a Redis Cluster`);
  });

  it('a file written before redis_cluster names a single Redis: refused exit 2, naming the file the URL came from', async () => {
    const { dataDir, file } = stoppedService('older', {});
    const run = await runCli(['approvals', 'describe', 'ap_svc_json_cluster'], following(dataDir));
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`The Redis at ${node.url} (from ${file}) is a node of a Redis Cluster (its INFO says cluster_enabled:1), but INTERLOCK_REDIS_CLUSTER is not set, so this command did not run`);
  });
});
