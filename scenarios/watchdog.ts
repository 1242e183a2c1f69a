// The run's watchdog: a detached process that outlives a runner killed outright (SIGKILL: the OOM killer, a CI hard
// stop), whose exit and signal hooks then never run. The runner notes every process it starts (its `interlock serve`
// children, the private redis-server) and every temporary directory in a registry file, one JSON entry a line (a path
// may hold a newline, which JSON writes as \n), written before it goes on; once the runner is gone (its end of the
// pipe closes, or its pid no longer names it), the watchdog SIGKILLs those still running and removes the directories.
// A runner that ends normally closes the pipe once it has stopped and removed everything itself, and the watchdog finds
// nothing left to do. Only where there is /proc: it tells a noted process from a later one with the same pid by its
// start time, and without that it does nothing.
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTimeOf } from './processes.js';
import type { RegistryEntry } from './watchdog-process.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PROCESS = fileURLToPath(new URL('./watchdog-process.ts', import.meta.url));

export type Watchdog = {
  /**
   * The directory of its registry: the runner removes it with its own leftovers (its exit hook included), so a run
   * that ends by itself leaves nothing, and the watchdog, finding no registry, nothing to do.
   */
  home: string;
  /** A process to SIGKILL should the runner die: noted with its start time. */
  process(pid: number): void;
  /** A directory to remove should the runner die. */
  dir(path: string): void;
  /** The runner has stopped and removed everything: the watchdog checks once more and exits. */
  close(): void;
};

/** Starts the watchdog for this process; null where there is no /proc (nothing would tell a pid reused). */
export function startWatchdog(): Watchdog | null {
  const start = startTimeOf(process.pid);
  if (!existsSync('/proc/self/stat') || start === null) return null;
  const home = mkdtempSync(join(tmpdir(), 'interlock-scenario-watchdog-'));
  const registry = join(home, 'registry');
  appendFileSync(registry, '');
  // Its own session (detached): a Ctrl-C to the terminal's process group does not end it before the runner.
  const child = spawn(process.execPath, ['--import', 'tsx', PROCESS, String(process.pid), start, home], { cwd: ROOT, detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  child.unref();
  child.stdin?.on('error', () => undefined);
  (child.stdin as { unref?: () => void } | null)?.unref?.();
  // Appended synchronously: a runner killed the next instant has noted it already.
  const note = (entry: RegistryEntry) => {
    try {
      appendFileSync(registry, `${JSON.stringify(entry)}\n`);
    } catch {
      // The registry's directory was removed (the watchdog ended early): nothing more can be noted.
    }
  };
  return {
    home,
    process(pid) {
      const started = startTimeOf(pid);
      if (started !== null) note({ pid, start: started });
    },
    dir(path) {
      note({ dir: path });
    },
    close() {
      child.stdin?.end();
    },
  };
}
