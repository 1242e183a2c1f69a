// Rule: a lock in --out is never empty or half written (its content is written whole beside it, then linked into
// place), and a stale lock is taken over by one run only (moved aside, then read again: a lock that is not the stale
// one read is put back and its run named). An empty lock (a write that failed after the create, or a run killed between
// the two) used to refuse every later run for ever, naming no pid and no file; and two runs taking over one stale lock
// could both hold the folder, the second removing the lock the first had just written.
import * as fs from 'node:fs';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../cli/run-cli.js';

// Stand-ins for what another process or a full disk does between two of this run's calls.
const hooks: { beforeRemove: ((path: string) => void) | null; failWrite: boolean } = { beforeRemove: null, failWrite: false };
vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof fs>();
  const full = () => {
    hooks.failWrite = false;
    throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
  };
  // Once, on the first removal or move of the lock itself (not of a file beside it).
  const removing = (path: fs.PathLike) => {
    const run = hooks.beforeRemove;
    if (run === null || !String(path).endsWith('/.scenario-run.lock')) return;
    hooks.beforeRemove = null;
    run(String(path));
  };
  return {
    ...real,
    writeSync: (...args: Parameters<typeof real.writeSync>) => (hooks.failWrite ? full() : (real.writeSync as (...given: unknown[]) => number)(...args)),
    writeFileSync: (...args: Parameters<typeof real.writeFileSync>) => (hooks.failWrite ? full() : real.writeFileSync(...args)),
    unlinkSync: (path: fs.PathLike) => {
      removing(path);
      real.unlinkSync(path);
    },
    renameSync: (from: fs.PathLike, to: fs.PathLike) => {
      removing(from);
      real.renameSync(from, to);
    },
  };
});

const { LOCK_FILE, lockOut } = await import('../../scenarios/out-folder.js');
const { startTimeOf } = await import('../../scenarios/processes.js');

const temp = tempDir('scenario-out-lock-takeover');
const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
afterAll(() => {
  sleeper.kill('SIGKILL');
  temp.remove();
});

function folder(name: string): string {
  const dir = join(temp.dir, name);
  fs.mkdirSync(dir);
  return dir;
}

describe('taking the lock in --out', () => {
  it('leaves no lock when writing it fails, so the next run takes the folder', () => {
    const dir = folder('full');
    hooks.failWrite = true;
    expect(() => lockOut(dir)).toThrow(/ENOSPC/);
    expect(readdirSync(dir)).toEqual([]);
    const later = lockOut(dir);
    expect('release' in later).toBe(true);
    expect(readFileSync(join(dir, LOCK_FILE), 'utf8')).toBe(`${process.pid} ${startTimeOf(process.pid) ?? '-'}\n`);
    if ('release' in later) later.release();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('takes over an empty lock (no run is writing it), and names the lock file when refused', () => {
    const dir = folder('empty');
    writeFileSync(join(dir, LOCK_FILE), '');
    const taken = lockOut(dir);
    expect('release' in taken).toBe(true);
    if ('release' in taken) taken.release();
    const held = `${sleeper.pid ?? 0} ${startTimeOf(sleeper.pid ?? 0) ?? '-'}\n`;
    writeFileSync(join(dir, LOCK_FILE), held);
    expect(lockOut(dir)).toEqual({ heldBy: sleeper.pid ?? 0, file: join(dir, LOCK_FILE) });
  });

  it('of two runs taking over one stale lock, the second leaves the first one its lock and names it', () => {
    const dir = folder('race');
    const path = join(dir, LOCK_FILE);
    // A run killed outright: a pid no process has (pid_max is at most 2^22).
    writeFileSync(path, '4194303 12345\n');
    const first = `${sleeper.pid ?? 0} ${startTimeOf(sleeper.pid ?? 0) ?? '-'}\n`;
    // After this run read the stale lock, and before it removes it, the first run takes it over and writes its own.
    hooks.beforeRemove = (removed) => {
      fs.unlinkSync(removed);
      writeFileSync(removed, first, { flag: 'wx' });
    };
    const second = lockOut(dir);
    const now = existsSync(path) ? readFileSync(path, 'utf8') : 'none';
    if ('release' in second) second.release();
    expect(now).toBe(first);
    expect(second).toEqual({ heldBy: sleeper.pid ?? 0, file: path });
    expect(readdirSync(dir)).toEqual([LOCK_FILE]);
  });
});
