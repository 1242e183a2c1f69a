// Rule: a process spawnWorker started dies with the test process that started it: a test that times out never runs
// its stop(), and its `interlock serve` (or sandbox) must not live on after the test run, holding ports and writing to
// a Redis that may be gone.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { REPO } from '../cli/run-cli.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

it('the worker of a test process that exits without stopping it is gone', async () => {
  // A test process that starts a long-running `interlock sandbox` through spawnWorker, says its pid, and exits.
  const script = `
    import { spawnWorker } from ${JSON.stringify(join(REPO, 'tests', 'pipeline', 'pipeline-support.ts'))};
    const worker = spawnWorker({}, ['sandbox', '--port', '0']);
    worker.child.stdout.once('data', () => { console.log('pid ' + worker.child.pid); process.exit(0); });
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await new Promise((resolve) => child.once('exit', resolve));
  const pid = Number(/pid (\d+)/.exec(out)?.[1] ?? NaN);
  expect(Number.isInteger(pid), out).toBe(true);
  const deadline = Date.now() + 5_000;
  while (alive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  const left = alive(pid);
  if (left) process.kill(pid, 'SIGKILL');
  expect(left).toBe(false);
}, 30_000);
