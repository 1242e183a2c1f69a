// Rule: a message says what is so. A service.json left by a service that was killed (no stopped_at) whose pid now
// belongs to another process (the machine or container started again; here pid 1, the container's init) is not taken
// for a running service: where /proc tells when a process started, one whose start is not the one the file records
// (pid_start_ticks), or, in a file that records none, one that started after the file was written, did not write it,
// so a command that cannot reach its Redis says to start the service again, not "which still runs; check it". A file
// whose writer does run (this test's process stands for it) is still called running.
import { chmodSync, existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processStartTicks } from '../../src/redis/private-server.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('svcjson-pid');
afterAll(() => temp.remove());

/** A data directory whose service.json names `facts` (and a Redis nothing answers at), written at `writtenAt`. */
function dataDirWith(name: string, facts: Record<string, unknown>, writtenAt?: Date): string {
  const dir = join(temp.dir, name);
  mkdirSync(dir, { mode: 0o700 });
  chmodSync(dir, 0o700);
  const file = join(dir, 'service.json');
  writeFileSync(file, JSON.stringify({ redis_url: 'redis://127.0.0.1:1', key_prefix: 'svcjson-pid', redis_cluster: false, ...facts }), { mode: 0o600 });
  if (writtenAt !== undefined) utimesSync(file, writtenAt, writtenAt);
  return dir;
}

const describeApproval = (dir: string) => runCli(['approvals', 'describe', 'ap_x'], { INTERLOCK_DATA_DIR: dir, REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined });
// Where /proc is not (macOS), the pid running is all a command goes on, as before.
const procTells = processStartTicks(1) !== null && existsSync('/proc/stat');

describe.runIf(procTells)('a service.json whose pid went to another process', { timeout: 60_000 }, () => {
  it('written before that process started (a file recording no start) is not a running service', async () => {
    const run = await describeApproval(dataDirWith('before', { pid: 1 }, new Date('2000-01-01')));
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).not.toContain('which still runs');
    expect(run.stderr).toContain('which is not running: start it again');
  });

  it('recording a start other than that process\'s is not a running service', async () => {
    const run = await describeApproval(dataDirWith('other-start', { pid: 1, pid_start_ticks: `${processStartTicks(1) ?? ''}1` }));
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).not.toContain('which still runs');
    expect(run.stderr).toContain('which is not running: start it again');
  });

  it('naming a process that does run, with its start (or none, written since it started), is a running service', async () => {
    for (const [name, facts] of [['own-start', { pid: process.pid, pid_start_ticks: processStartTicks(process.pid) }], ['no-start', { pid: process.pid }]] as const) {
      const run = await describeApproval(dataDirWith(name, facts));
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr, name).toContain(`(pid ${process.pid}), which still runs`);
    }
  });
});
