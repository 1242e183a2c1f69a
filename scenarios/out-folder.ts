// The folder a run writes into (--out): taken only when it holds nothing but a run's files, and held by one run at a
// time. The index is always <out>/README.md and each page replaces its namesake, so a folder of the user's own
// (`--out .`, `--out docs`) would lose its README.md; two runs into one folder would each replace the other's files
// and the index would present the mix as one run.
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, lstatSync, readdirSync, readFileSync, realpathSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { sameProcess, startTimeOf } from './processes.js';
import { RESULT_KEYS, RESULTS_MARKER } from './report.js';

/** The lock a run holds in its --out for as long as it runs: `<pid> <start time>`. */
export const LOCK_FILE = '.scenario-run.lock';

/**
 * Names a run leaves in its folder for a moment: its write probe, writeFileWhole's temporary files and the lock's
 * (lockOut: `.scenario_lock.<pid>.<hex>.tmp`, its content before it is linked into place or a stale lock moved aside).
 */
const PASSING = /^\.(?:write-probe-\d+|[\w.]+\.\d+\.[0-9a-f]+\.tmp)$/;

/**
 * The files in `out` a run did not write, or null when a run may write there: a folder that does not exist yet, is
 * empty, or holds only a results index carrying RESULTS_MARKER, the scenarios' pages and JSON files, and the lock.
 * A folder with the JSON files but no index (a render's input) is a run's too; a page (`<key>.md`) counts as a run's
 * only beside the marked index, since a user's own notes may carry its name (`stripe_dispute.md`). A page or JSON name
 * counts only as a regular file: a folder or link of that name is the user's, and the run would fail on it at its end.
 * Reads only; `out` that is not a folder is left to the write probe, which says why it cannot be written.
 */
export function foreignFiles(out: string): string[] | null {
  if (!existsSync(out) || !statSync(out).isDirectory()) return null;
  const names = readdirSync(out);
  const indexed = names.includes('README.md') && indexIsOurs(join(out, 'README.md'));
  const json = new Set(RESULT_KEYS.map((key) => `${key}.json`));
  const pages = new Set(RESULT_KEYS.map((key) => `${key}.md`));
  const foreign: string[] = [];
  for (const name of names) {
    if (name === LOCK_FILE || PASSING.test(name)) continue;
    if (name === 'README.md' && indexed) continue;
    if ((json.has(name) || (indexed && pages.has(name))) && regularFile(join(out, name))) continue;
    foreign.push(name);
  }
  return foreign.length === 0 ? null : foreign;
}

function regularFile(path: string): boolean {
  try {
    return lstatSync(path).isFile();
  } catch {
    return false;
  }
}

function indexIsOurs(path: string): boolean {
  try {
    return lstatSync(path).isFile() && readFileSync(path, 'utf8').split('\n').includes(RESULTS_MARKER);
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

/** A name in `out` for the lock's content on its way in, or for a stale lock moved aside: a PASSING name. */
function sideName(out: string): string {
  return join(out, `.scenario_lock.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Gone already.
  }
}

/**
 * Takes the lock in `out` (a folder that exists) for this process, or answers the pid of the live run holding it (null
 * when it could not be told) and the lock's path. The lock, `<pid> <start time>`, is written whole to a file beside it
 * and linked into place (link fails where the lock exists: the atomic create), so it is never empty or half written.
 * A lock whose process is gone (a run killed with SIGKILL, or its pid now another process's) is taken over: moved
 * aside under a name of this run's, then read again, so that of two runs taking over one stale lock only one removes
 * it; a lock found moved that is not the stale one read (another run's, just written) is put back.
 */
export function lockOut(out: string): OutLock | { heldBy: number | null; file: string } {
  const path = join(out, LOCK_FILE);
  const mine = `${process.pid} ${startTimeOf(process.pid) ?? '-'}\n`;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const incoming = sideName(out);
    try {
      writeFileSync(incoming, mine, { flag: 'wx', mode: 0o644 });
      linkSync(incoming, path);
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
    } finally {
      removeQuietly(incoming);
    }
    let held: string;
    try {
      held = readFileSync(path, 'utf8');
    } catch {
      continue;
    }
    const [pidText = '', start = '-'] = held.trim().split(' ');
    const pid = Number(pidText);
    // An empty or unreadable lock is no run's: this code never leaves one (an older version could, killed mid-write).
    if (Number.isInteger(pid) && pid > 0 && sameProcess(pid, start)) return { heldBy: pid, file: path };
    const aside = sideName(out);
    try {
      renameSync(path, aside);
    } catch {
      // Another run took it over first: the next attempt reads its lock.
      continue;
    }
    let moved: string | null = null;
    try {
      moved = readFileSync(aside, 'utf8');
    } catch {
      // Unreadable: not known to be the stale lock, so it is put back.
    }
    if (moved === held) {
      removeQuietly(aside);
      continue;
    }
    // Another run took the stale lock over between this run's read and its move: its lock goes back where it was.
    try {
      linkSync(aside, path);
    } catch {
      // A third run's lock is in place now: the next attempt reads it.
    }
    removeQuietly(aside);
    const movedPid = Number((moved ?? '').trim().split(' ')[0]);
    return { heldBy: Number.isInteger(movedPid) && movedPid > 0 ? movedPid : null, file: path };
  }
  return { heldBy: null, file: path };
}
