// Rule: a scenario run on a REDIS_URL (a Redis others use) removes what it wrote there, its journals, approvals and
// queues, when it ends, unless --keep-journals asks to keep them; then it names where they are. Ctrl-C in the middle
// removes them too, after stopping the run's processes, and the run still exits 130, saying what it removed.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { inTempDir, REPO, runCli } from '../cli/run-cli.js';
import { REDIS_URL } from '../support/harness.js';

const redis = new Redis(REDIS_URL);
afterAll(async () => {
  await redis.quit();
});

/** Every key under the run's prefix and its queues' prefix (SCAN, not KEYS: others use this Redis). */
async function keysOf(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for (const pattern of [`${prefix}:*`, `{${prefix}-queues}:*`]) {
    for await (const page of redis.scanStream({ match: pattern, count: 1000 })) keys.push(...(page as string[]));
  }
  return keys;
}

/** One gate cell of shared_cap on the shared Redis; the prefix the run used, from its JSON. */
async function gateCell(extra: string[]): Promise<{ code: number; stderr: string; prefix: string }> {
  return inTempDir('scenario-redis-keys', async (dir) => {
    const run = await runCli(['scenario', 'shared-cap', '--delays', 'fast', '--reps', '1', '--rows', 'after_commit', '--columns', 'interlock', '--out', dir, ...extra], { REDIS_URL, INTERLOCK_UNSAFE_DURABILITY: '1', STRIPE_SECRET_KEY: undefined }, { timeoutMs: 100_000 });
    const written = JSON.parse(readFileSync(join(dir, 'shared_cap.json'), 'utf8')) as { redis_prefix: string };
    return { code: run.code, stderr: run.stderr, prefix: written.redis_prefix };
  });
}

/** The same gate cell, sent SIGINT once it is under way; its exit code and stderr. */
async function interruptedGateCell(): Promise<{ code: number | null; stderr: string }> {
  return inTempDir('scenario-interrupted', async (dir) => {
    const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL, INTERLOCK_UNSAFE_DURABILITY: '1', INTERLOCK_LOG_LEVEL: 'silent', INTERLOCK_SIGNING_KEY_FILE: '' };
    delete env.STRIPE_SECRET_KEY;
    const child = spawn(process.execPath, [join(REPO, 'bin', 'interlock.js'), 'scenario', 'shared-cap', '--delays', 'fast', '--reps', '1', '--rows', 'after_commit', '--columns', 'interlock', '--out', dir], { cwd: REPO, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    const guard = setTimeout(() => child.kill('SIGKILL'), 90_000);
    try {
      // The progress line names the cell once the world is open (its support API up, its queues made): keys exist.
      await new Promise<void>((resolve) => {
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString('utf8');
          if (stderr.includes('after_commit / interlock #1')) resolve();
        });
        void exited.then(() => resolve());
      });
      child.kill('SIGINT');
      return { code: await exited, stderr };
    } finally {
      clearTimeout(guard);
    }
  });
}

describe("a scenario run's keys on a REDIS_URL", { timeout: 120_000 }, () => {
  it('are removed when the run is interrupted, which stops its processes, says what it removed and exits 130', async () => {
    const run = await interruptedGateCell();
    // Named on stderr as the world opens, fix or no fix: the test removes what a failed removal left.
    const prefix = /shared_cap: its Redis keys are under (scenario-shared_cap-[0-9a-f]+):\*/.exec(run.stderr)?.[1];
    try {
      expect(run.code, run.stderr).toBe(130);
      expect(prefix, run.stderr).toBeDefined();
      expect(await keysOf(String(prefix))).toEqual([]);
      const removed = /Removed (\d+) Redis keys? of shared_cap \(([^ ]+):\* and \{([^ ]+)-queues\}:\*\)\./.exec(run.stderr);
      expect(removed?.slice(2), run.stderr).toEqual([prefix, prefix]);
      expect(Number(removed?.[1])).toBeGreaterThan(0);
      expect(run.stderr).toContain('SIGINT: stopped; the cells under way are not written');
    } finally {
      const left = prefix === undefined ? [] : await keysOf(prefix);
      if (left.length > 0) await redis.unlink(...left);
    }
  });

  it('are removed when the run ends', async () => {
    const run = await gateCell([]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.prefix).toMatch(/^scenario-shared_cap-[0-9a-f]+$/);
    expect(await keysOf(run.prefix)).toEqual([]);
  });

  it('stay with --keep-journals, and the run names where they are', async () => {
    const run = await gateCell(['--keep-journals']);
    try {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain(`Kept the Redis keys of shared_cap (--keep-journals): ${run.prefix}:* and {${run.prefix}-queues}:*`);
      const kept = await keysOf(run.prefix);
      expect(kept.some((key) => key.startsWith(`${run.prefix}:`))).toBe(true);
      expect(kept.some((key) => key.startsWith(`{${run.prefix}-queues}:`))).toBe(true);
    } finally {
      const kept = await keysOf(run.prefix);
      if (kept.length > 0) await redis.unlink(...kept);
    }
  });
});
