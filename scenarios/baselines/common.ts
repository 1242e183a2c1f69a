// What every baseline worker does the same way, as the seeds' workers did: read the files the harness wrote into
// the cell's state directory, append a log line fsynced before the next step, die by a real SIGKILL at the named
// crash point, and print the answer as the last line of stdout. Nothing here comes from the gate (src/).
import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export function readState<T>(dir: string, name: string): T {
  return JSON.parse(readFileSync(join(dir, name), 'utf8')) as T;
}

/** Appends one JSON line and fsyncs it before returning: the line survives a SIGKILL right after. */
export function appendLog(file: string, line: Record<string, unknown>): void {
  const fd = openSync(file, 'a');
  try {
    writeSync(fd, `${JSON.stringify({ ts: Date.now() / 1000, pid: process.pid, ...line })}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The crash: this process kills itself with SIGKILL, so nothing after this point runs (no handler, no flush). */
export function crashNow(): never {
  process.kill(process.pid, 'SIGKILL');
  throw new Error('SIGKILL did not end the process');
}

export function answer(value: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

