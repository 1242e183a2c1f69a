// The folder a run writes into (--out): taken only when it holds nothing but a run's files, and held by one run at a
// time. The index is always <out>/README.md and each page replaces its namesake, so a folder of the user's own
// (`--out .`, `--out docs`) would lose its README.md; two runs into one folder would each replace the other's files
// and the index would present the mix as one run.
import { closeSync, existsSync, openSync, readdirSync, readFileSync, realpathSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { sameProcess, startTimeOf } from './processes.js';
import { RESULT_KEYS, RESULTS_MARKER } from './report.js';

/** The lock a run holds in its --out for as long as it runs: `<pid> <start time>`. */
export const LOCK_FILE = '.scenario-run.lock';

/** Names a run leaves in its folder for a moment: its write probe and writeFileWhole's temporary files. */
const PASSING = /^\.(?:write-probe-\d+|[\w.]+\.\d+\.[0-9a-f]+\.tmp)$/;

/**
 * The files in `out` a run did not write, or null when a run may write there: a folder that does not exist yet, is
 * empty, or holds only a results index carrying RESULTS_MARKER, the scenarios' pages and JSON files, and the lock.
 * A folder with the JSON files but no index (a render's input) is a run's too. Reads only; `out` that is not a folder
 * is left to the write probe, which says why it cannot be written.
 */
export function foreignFiles(out: string): string[] | null {
  if (!existsSync(out) || !statSync(out).isDirectory()) return null;
  const ours = new Set([LOCK_FILE, ...RESULT_KEYS.flatMap((key) => [`${key}.json`, `${key}.md`])]);
  const foreign: string[] = [];
  for (const name of readdirSync(out)) {
    if (ours.has(name) || PASSING.test(name)) continue;
    if (name === 'README.md' && indexIsOurs(join(out, name))) continue;
    foreign.push(name);
  }
  return foreign.length === 0 ? null : foreign;
}

function indexIsOurs(path: string): boolean {
  try {
    return statSync(path).isFile() && readFileSync(path, 'utf8').split('\n').includes(RESULTS_MARKER);
  } catch {
    return false;
  }
}

/** The sentence that refuses `out` for its foreign files; `what`: the command (a run, render). */
export function foreignFolderProblem(out: string, files: readonly string[], what: string): string {
  const shown = files.length > 5 ? `${files.slice(0, 5).join(', ')} and ${files.length - 5} more` : files.join(', ');
  return `--out ${out} holds files a scenario run did not write (${shown}): ${what} writes its index as README.md there and replaces its pages, so it takes only a new or empty folder, or one a run wrote (its README.md starts with the line ${RESULTS_MARKER}). Nothing was written. Give --out a new folder.`;
}

/** Whether two paths name one folder (through symbolic links, `..` and the working directory). */
export function sameFolder(a: string, b: string): boolean {
  const real = (path: string) => {
    try {
      return realpathSync(path);
    } catch {
      return resolve(path);
    }
  };
  return real(a) === real(b);
}

export type OutLock = { release(): void };

/**
 * Takes the lock in `out` (a folder that exists) for this process, or answers the pid of the live run holding it. A
 * lock whose process is gone (a run killed with SIGKILL, or its pid now another process's) is taken over.
 */
export function lockOut(out: string): OutLock | { heldBy: number | null } {
  const path = join(out, LOCK_FILE);
  const mine = `${process.pid} ${startTimeOf(process.pid) ?? '-'}\n`;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      const fd = openSync(path, 'wx', 0o644);
      try {
        writeSync(fd, mine);
      } finally {
        closeSync(fd);
      }
      return {
        release() {
          try {
            if (readFileSync(path, 'utf8') === mine) unlinkSync(path);
          } catch {
            // Already gone.
          }
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let held: string;
    try {
      held = readFileSync(path, 'utf8');
    } catch {
      continue;
    }
    const [pidText = '', start = '-'] = held.trim().split(' ');
    const pid = Number(pidText);
    // A lock being written (empty for an instant) is a live run's.
    if (held === '') return { heldBy: null };
    if (Number.isInteger(pid) && pid > 0 && sameProcess(pid, start)) return { heldBy: pid };
    try {
      unlinkSync(path);
    } catch {
      // Another run took it over first: the next attempt reads its lock.
    }
  }
  return { heldBy: null };
}
