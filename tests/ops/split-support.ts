// A split deployment as docker compose runs one, as separate `serve --roles …` processes on one data dir (compose's
// /data volume) and the shared Redis under a key prefix of their own, with an in-process sandbox standing in for
// Stripe. Every process is stopped by its own handle; the prefix's keys are deleted at the end.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startSandbox } from '../../sandbox/index.js';
import { spawnWorker } from '../pipeline/pipeline-support.js';

const REDIS_URL = 'redis://127.0.0.1:6379';

export type SplitDeployment = {
  dataDir: string;
  /** A `serve` with these roles, and the port its HTTP listener takes (null for one with no api or webhooks role). */
  start(roles: string, extra?: Record<string, string>): ReturnType<typeof spawnWorker>;
  port(): number;
  token(role: 'support' | 'approver' | 'auditor' | 'operator'): string;
  stop(): Promise<void>;
};

/** A port from 30000-39999 not handed out before in this file's run (the OS may still refuse it: the start then fails). */
const given = new Set<number>();
function randomPort(): number {
  for (;;) {
    const port = 30_000 + Math.floor(Math.random() * 10_000);
    if (!given.has(port)) {
      given.add(port);
      return port;
    }
  }
}

export async function startSplitDeployment(name: string): Promise<SplitDeployment> {
  const prefix = `${name}-${Math.random().toString(36).slice(2, 10)}`;
  const dataDir = mkdtempSync(join(tmpdir(), `${name}-`));
  const sandbox = await startSandbox({ port: 0, delays: 'fast' });
  const env = { REDIS_URL, STRIPE_SECRET_KEY: 'sk_test_sandbox', STRIPE_API_BASE: sandbox.url, STRIPE_WEBHOOK_SECRET: 'whsec_splitdeployment', INTERLOCK_DATA_DIR: dataDir, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_UNSAFE_DURABILITY: '1' };
  const started: ReturnType<typeof spawnWorker>[] = [];
  return {
    dataDir,
    start(roles, extra = {}) {
      const child = spawnWorker({ ...env, ...extra }, ['serve', '--roles', roles]);
      started.push(child);
      return child;
    },
    port: randomPort,
    token(role) {
      const line = readFileSync(join(dataDir, 'api-tokens'), 'utf8')
        .split('\n')
        .find((entry) => entry.split(':')[1] === role);
      if (line === undefined) throw new Error(`${dataDir}/api-tokens holds no ${role} token`);
      return line.split(':').slice(2).join(':');
    },
    async stop() {
      await Promise.all(started.map((child) => child.stop(5_000)));
      await sandbox.close();
      const redis = new Redis(REDIS_URL);
      for (const pattern of [`${prefix}*`, `{${prefix}*`]) {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
          cursor = next;
          if (keys.length > 0) await redis.del(...keys);
        } while (cursor !== '0');
      }
      redis.disconnect();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
