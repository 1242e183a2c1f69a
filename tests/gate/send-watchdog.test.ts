// A send is aborted at its deadline, but only a running event loop can abort it. The watchdog thread kills a
// process whose send outlived its deadline plus the grace (half the settle margin), so a frozen sender becomes a
// crash that recovery handles, instead of a write that lands after others trusted an empty lookup.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { removePrefixes } from '../support/harness.js';

// The stall workers' key prefixes: a worker killed mid-send leaves its journal, removed here at the end.
const prefixes: string[] = [];
afterAll(() => removePrefixes(prefixes));

function runStallWorker(stallMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; ms: number }> {
  const started = Date.now();
  const prefix = `stall${randomBytes(4).toString('hex')}`;
  prefixes.push(prefix);
  const child = spawn(process.execPath, ['--import', 'tsx', 'tests/support/stall-worker.ts'], {
    env: { ...process.env, STALL_MS: String(stallMs), STALL_PREFIX: prefix, INTERLOCK_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, stdout, stderr, ms: Date.now() - started })));
}

function runWatchdogChild(which: string, freezeMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; ms: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'tests/support/watchdog-child.ts'], {
    env: { ...process.env, WATCHDOG_CASE: which, FREEZE_MS: String(freezeMs) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, stdout, ms: Date.now() - started })));
}

describe("the send watchdog's slots (shared with its thread, no message per send)", () => {
  it('kills a process frozen past a send\'s deadline and grace, and leaves one whose send was disarmed alone', async () => {
    const [stalled, disarmed] = await Promise.all([runWatchdogChild('stalled', 8_000), runWatchdogChild('disarmed', 1_500)]);
    expect(stalled).toMatchObject({ signal: 'SIGKILL' });
    expect(stalled.stdout).toContain('frozen');
    expect(stalled.stdout).not.toContain('survived');
    expect(stalled.ms).toBeLessThan(7_000);
    expect(disarmed).toMatchObject({ code: 0, signal: null });
    expect(disarmed.stdout).toContain('survived');
  }, 30_000);

  it('watches a send armed when every slot of the first block is taken, and a send armed after a disarm was called twice', async () => {
    const runs = await Promise.all([runWatchdogChild('beyond-first-block', 8_000), runWatchdogChild('disarmed-twice', 8_000)]);
    for (const run of runs) {
      expect(run).toMatchObject({ signal: 'SIGKILL' });
      expect(run.stdout).not.toContain('survived');
    }
  }, 30_000);
});

describe('the send watchdog', () => {
  it('kills a process whose event loop froze during a send, long before the freeze would have ended', async () => {
    const run = await runStallWorker(20_000);
    expect(run.stdout).toContain('sending');
    expect(run.signal).toBe('SIGKILL');
    expect(run.stdout).not.toContain('answer');
    expect(run.stderr).toMatch(/outlived its deadline/);
    expect(run.ms).toBeLessThan(15_000);
  }, 30_000);

  it('leaves a send that finishes in time alone', async () => {
    const run = await runStallWorker(0);
    expect(run).toMatchObject({ code: 0, signal: null });
    expect(run.stdout).toContain('answer COMMITTED');
  }, 30_000);
});
