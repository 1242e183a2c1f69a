// The watchdog process (watchdog.ts starts it): `watchdog-process.ts <runner pid> <runner start time> <home>`. Reads
// the registry in <home> (one JSON entry a line) once the runner is gone, SIGKILLs the noted processes that are still
// the ones noted (same start time) and any redis-server working inside a noted directory (a private redis-server killed
// with its runner before its pid was noted runs in its directory), then removes the directories and <home>. Imports
// only node: modules.
import { readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sameProcess, startTimeOf } from './processes.js';

const [runnerText = '', runnerStart = '', home = ''] = process.argv.slice(2);
const runner = Number(runnerText);
/** How often the runner's pid is checked (ms), besides the pipe closing. */
const POLL_MS = 1_000;
/** How long the processes killed get to exit before their directories are removed anyway (ms). */
const EXIT_WAIT_MS = 5_000;

function noted(): { processes: { pid: number; start: string }[]; dirs: string[] } {
  let text = '';
  try {
    text = readFileSync(join(home, 'registry'), 'utf8');
  } catch {
    // No registry: nothing was noted.
  }
  const processes: { pid: number; start: string }[] = [];
  const dirs: string[] = [];
  for (const line of text.split('\n')) {
    const entry = parseEntry(line);
    if (entry === null) continue;
    if ('dir' in entry) dirs.push(entry.dir);
    else processes.push(entry);
  }
  return { processes, dirs };
}

/**
 * A line of the registry: one entry in JSON, so a path holding a newline stays on its line. A line that is not exactly
 * one entry (a runner killed in the middle of its write, or anything else) is ignored: removing a directory on a guess
 * could remove one that is not the run's.
 */
export type RegistryEntry = { pid: number; start: string } | { dir: string };

function parseEntry(line: string): RegistryEntry | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const fields = value as Record<string, unknown>;
  const keys = Object.keys(fields).sort().join(',');
  if (keys === 'dir' && typeof fields.dir === 'string' && fields.dir.startsWith('/')) return { dir: fields.dir };
  if (keys === 'pid,start' && Number.isInteger(fields.pid) && typeof fields.pid === 'number' && fields.pid > 0 && typeof fields.start === 'string' && /^\d+$/.test(fields.start)) return { pid: fields.pid, start: fields.start };
  return null;
}

/** redis-servers working in one of `dirs` (a private Redis runs in its directory), with their start times. */
function workingIn(dirs: readonly string[]): { pid: number; start: string }[] {
  if (dirs.length === 0) return [];
  const found: { pid: number; start: string }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/comm`, 'utf8').trim() !== 'redis-server') continue;
      const cwd = readlinkSync(`/proc/${name}/cwd`).replace(/ \(deleted\)$/, '');
      const start = startTimeOf(Number(name));
      if (start !== null && dirs.some((dir) => cwd === dir || cwd.startsWith(`${dir}/`))) found.push({ pid: Number(name), start });
    } catch {
      // Gone, or another user's.
    }
  }
  return found;
}

let swept = false;
async function sweep(): Promise<void> {
  if (swept) return;
  swept = true;
  const { processes, dirs } = noted();
  const targets = [...processes, ...workingIn(dirs)].filter((target) => target.pid !== process.pid && sameProcess(target.pid, target.start));
  for (const target of targets) {
    try {
      process.kill(target.pid, 'SIGKILL');
    } catch {
      // Exited meanwhile.
    }
  }
  const deadline = Date.now() + EXIT_WAIT_MS;
  while (targets.some((target) => sameProcess(target.pid, target.start)) && Date.now() < deadline) await sleep(50);
  for (const dir of [...dirs, home]) rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

if (!Number.isInteger(runner) || runner <= 0 || home === '') process.exit(2);
process.stdin.on('end', () => void sweep());
process.stdin.on('error', () => void sweep());
process.stdin.resume();
setInterval(() => {
  if (!sameProcess(runner, runnerStart)) void sweep();
}, POLL_MS);
