// A process told apart from a later one with the same pid: by its start time in /proc/<pid>/stat. Read by the run
// (its --out lock, the processes it gives its watchdog) and by the watchdog itself, which imports nothing else so it
// starts quickly.
import { existsSync, readFileSync } from 'node:fs';

/** The start time of a process (clock ticks since boot, /proc/<pid>/stat field 22), or null when it is gone or there is no /proc. */
export function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command name (which may hold spaces and parentheses): state is field 3, start time field 22.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? null : (fields[19] ?? null);
  } catch {
    return null;
  }
}

/**
 * Whether `pid` is still the process whose start time was `start`: where there is /proc, by its start time (a pid
 * handed to another process since does not count); elsewhere, or with no start time recorded ('-'), whether it lives.
 */
export function sameProcess(pid: number, start: string): boolean {
  if (start !== '-' && existsSync('/proc/self/stat')) return startTimeOf(pid) === start;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
