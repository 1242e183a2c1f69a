// Rule: one run at a time per --out: a run holds <out>/.scenario-run.lock (its pid and start time) from before its
// Redis starts to its end, and a second run into the folder is refused at once (exit 2), naming the pid that holds
// it; a lock whose process is gone, or whose pid is now another process's, is taken over. Two runs into one folder
// used to both exit 0, the files keeping only the last one's cells and the index mixing the runs as one.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCK_FILE, lockOut } from '../../scenarios/out-folder.js';
import { startTimeOf } from '../../scenarios/processes.js';
import { ScenarioUsageError } from '../../scenarios/run.js';
import { runCli, tempDir } from '../cli/run-cli.js';
import { oneCell } from './no-world-run.js';

const temp = tempDir('scenario-out-lock');
const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
afterAll(() => {
  sleeper.kill('SIGKILL');
  temp.remove();
});

function folder(name: string): string {
  const dir = join(temp.dir, name);
  mkdirSync(dir);
  return dir;
}

describe('the lock a run holds in its --out', { timeout: 60_000 }, () => {
  it('is refused to a second taker while held, and released', () => {
    const dir = folder('held');
    const lock = lockOut(dir);
    expect('release' in lock).toBe(true);
    expect(lockOut(dir)).toEqual({ heldBy: process.pid, file: join(dir, LOCK_FILE) });
    if ('release' in lock) lock.release();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('is taken over from a process that is gone, and from a pid now naming another process', async () => {
    const gone = spawn('true', { stdio: 'ignore' });
    const pid = gone.pid ?? 0;
    const start = startTimeOf(pid) ?? '-';
    await once(gone, 'exit');
    const dead = folder('dead');
    writeFileSync(join(dead, LOCK_FILE), `${pid} ${start}\n`);
    expect('release' in lockOut(dead)).toBe(true);
    // The sleeper's pid with another start time: the run that wrote it is gone, and its pid was handed on.
    const reused = folder('reused');
    writeFileSync(join(reused, LOCK_FILE), `${sleeper.pid ?? 0} 1\n`);
    expect('release' in lockOut(reused)).toBe(true);
  });

  it('refuses a run while another live run holds the folder, naming its pid, running and writing nothing', async () => {
    const dir = folder('busy');
    const held = `${sleeper.pid ?? 0} ${startTimeOf(sleeper.pid ?? 0) ?? '-'}\n`;
    writeFileSync(join(dir, LOCK_FILE), held);
    const opened = { count: 0 };
    const run = oneCell(dir, opened);
    await expect(run).rejects.toThrow(ScenarioUsageError);
    await expect(run).rejects.toThrow(`Another scenario run (pid ${sleeper.pid ?? 0}) is writing into --out ${dir} now`);
    expect(opened.count).toBe(0);
    expect(readdirSync(dir)).toEqual([LOCK_FILE]);
    expect(readFileSync(join(dir, LOCK_FILE), 'utf8')).toBe(held);
    const cli = await runCli(['scenario', 'stripe-dispute', '--delays', 'fast', '--rows', 'crash_after_send_chargeback_during_outage', '--columns', 'no_check', '--out', dir], { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined }, { timeoutMs: 40_000 });
    expect(cli.code, cli.stderr).toBe(2);
    expect(cli.stderr).toContain(`(pid ${sleeper.pid ?? 0})`);
    expect(readdirSync(dir)).toEqual([LOCK_FILE]);
  });

  it('is released when a run ends', async () => {
    const dir = join(temp.dir, 'ends');
    await oneCell(dir);
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  });
});
