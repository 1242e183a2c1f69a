// Rule: a sender with the send watchdog on does not start as PID 1. The kernel delivers to the first process of a pid
// namespace (a container's entrypoint when the container has no init) only the signals it has a handler for, so the
// SIGKILL the watchdog sends its own process is dropped, and a sender frozen mid-send lived on to write after its
// deadline and the settle margin, when recovery may have taken its effect over: the watchdog logged "killing the
// process" every 20 ms and killed nothing. As PID 1 the sender refuses to start, sending nothing, and says how to run
// it under an init; under an init (sh here as PID 1, as docker-init is under compose's `init: true`) the watchdog
// kills the frozen sender as it does outside a container. Needs `unshare` and root, as the CI machine has.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { watchdogProblem } from '../../src/gate/send-watchdog.js';
import { removePrefixes } from '../support/harness.js';

const prefixes: string[] = [];
afterAll(() => removePrefixes(prefixes));

/** The stall worker (tests/support/stall-worker.ts) in a new pid namespace: as its PID 1, or as the child of a shell that is. */
function stallWorkerInNamespace(asPidOne: boolean): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const prefix = `pidone${randomBytes(4).toString('hex')}`;
  prefixes.push(prefix);
  const worker = [process.execPath, '--import', 'tsx', 'tests/support/stall-worker.ts'];
  // `; exit $?` keeps sh from replacing itself with node, so sh stays PID 1 and node is its child.
  const argv = ['--pid', '--fork', '--mount-proc', ...(asPidOne ? worker : ['sh', '-c', `${worker.join(' ')}; exit $?`])];
  const started = Date.now();
  const child = spawn('unshare', argv, { env: { ...process.env, STALL_MS: '12000', STALL_PREFIX: prefix, INTERLOCK_LOG_LEVEL: 'silent' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code: signal === null ? code : 128, stdout, stderr, ms: Date.now() - started })));
}

describe('the send watchdog and PID 1', () => {
  it('names PID 1 as a process it cannot work in, and no other pid', () => {
    expect(watchdogProblem(1)).toMatch(/PID 1 .*ignores the SIGKILL.*docker run --init.*init: true.*INTERLOCK_SEND_WATCHDOG=0/);
    for (const pid of [2, 7, 4_194_304]) expect(watchdogProblem(pid)).toBeNull();
  });

  it('as PID 1 of a pid namespace, a sender refuses to start and sends nothing; under an init, its watchdog kills it frozen mid-send', async () => {
    expect(spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true']).status, 'unshare (as root) must be able to make a pid namespace').toBe(0);
    const [pidOne, underInit] = await Promise.all([stallWorkerInNamespace(true), stallWorkerInNamespace(false)]);
    expect(pidOne.code).toBe(1);
    expect(pidOne.stdout).not.toContain('sending');
    expect(pidOne.stderr).toContain('This process is PID 1');
    // Under an init: killed about half a second after the send began, not after the 12 s freeze.
    expect(underInit.stdout).toContain('sending');
    expect(underInit.stdout).not.toContain('answer');
    expect(underInit.code).toBe(128 + 9);
    expect(underInit.ms).toBeLessThan(8_000);
  }, 40_000);
});
