// A send is aborted at its deadline, but only a running event loop can abort it. The watchdog thread kills a
// process whose send outlived its deadline plus the grace (half the settle margin), so a frozen sender becomes a
// crash that recovery handles, instead of a write that lands after others trusted an empty lookup.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

function runStallWorker(stallMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; ms: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'tests/support/stall-worker.ts'], {
    env: { ...process.env, STALL_MS: String(stallMs), INTERLOCK_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, stdout, stderr, ms: Date.now() - started })));
}

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
