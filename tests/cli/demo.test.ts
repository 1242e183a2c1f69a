// `interlock demo`: two gated refunds through crashes and recovery, on the Redis a service may be using. It keeps its
// journal under a key prefix of its own: run beside a service it wrote into the service's journal, so the service's
// effects list, inbox and alerts showed the demo's refunds as if support had made them.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { REDIS_URL } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const prefix = `tdemo${randomBytes(4).toString('hex')}`;
const temp = tempDir('demo');
const redis = new Redis(REDIS_URL);

afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  temp.remove();
});

describe('interlock demo', { timeout: 120_000 }, () => {
  it("settles both refunds with valid receipts, and writes nothing under the service's key prefix", async () => {
    const run = await runCli(['demo'], { REDIS_URL, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: temp.dir }, { timeoutMs: 100_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('COMMITTED_BY_RETRY');
    expect(run.stdout).toContain('REFUSED:stale_premise_at_recovery');
    expect(run.stdout.match(/"valid": true/g)).toHaveLength(2);
    expect(await redis.keys(`${prefix}:*`)).toEqual([]);
    expect((await redis.keys(`${prefix}-demo:*`)).length).toBeGreaterThan(0);
    // The receipt it names is exported as the line says (with the data dir the demo ran under: its signing key is there).
    const command = /`INTERLOCK_KEY_PREFIX=(\S+) INTERLOCK_DATA_DIR=(\S+) npx interlock receipt export ([0-9a-f]{64})`/.exec(run.stdout);
    expect(command?.[1]).toBe(`${prefix}-demo`);
    expect(command?.[2]).toBe(temp.dir);
    const exported = await runCli(['receipt', 'export', command?.[3] ?? ''], { REDIS_URL, INTERLOCK_KEY_PREFIX: command?.[1] ?? '', INTERLOCK_DATA_DIR: command?.[2] ?? '' });
    expect(exported.code, exported.stderr).toBe(0);
    expect(JSON.parse(exported.stdout)).toMatchObject({ effectId: command?.[3] });
  });

  // Rule (src/demo.ts): the demo's journal is a throwaway deployment of its own, so a run from another data directory
  // (another checkout, a data directory removed to start afresh: another signing key) on the same Redis runs too. It was
  // refused as another deployment's process (the first run's key was recorded as the demo deployment's).
  it('runs again from another data directory, with another key', async () => {
    const other = tempDir('demo-other');
    try {
      const run = await runCli(['demo'], { REDIS_URL, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: other.dir }, { timeoutMs: 100_000 });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout.match(/"valid": true/g)).toHaveLength(2);
    } finally {
      other.remove();
    }
  });
});
