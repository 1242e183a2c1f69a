// The verifying thread tests/cli/verify-pool.test.ts gives the pool: the real threadShare, except for paths named
// to make it stall, die, or send a report larger than its pipe, so the pool can be watched meeting each of them.
import { pipeWriter, threadShare as verifyingShare, type ReportPipe } from '../../src/cli/verify-pool.js';

/** How long a thread stalls on a path ending in `.stalls` before reporting it (as a file that is not there). */
export const STALL_MS = 3_000;
/** The exit code of a thread that meets a path ending in `.dies`: as if a hostile file had ended it. */
export const DEATH_CODE = 70;
/** The length of the line sent for a path ending in `.huge-line`: three pipes' worth. */
export const HUGE_LINE = 3 * 1024 * 1024;

export function threadShare(files: readonly string[], publicKeyPems: readonly string[], pipe: ReportPipe, full: () => void): void {
  for (const file of files) {
    if (file.endsWith('.huge-line')) {
      pipeWriter(pipe, full)({ status: 'invalid', line: JSON.stringify({ file, status: 'invalid', filler: 'x'.repeat(HUGE_LINE) }) });
      continue;
    }
    if (file.endsWith('.dies')) process.exit(DEATH_CODE);
    // Said only by a thread: verifyMany's own thread finds no such file.
    if (file.endsWith('.on-a-thread')) {
      pipeWriter(pipe, full)({ status: 'valid', line: JSON.stringify({ file, status: 'valid', verifiedOn: 'a thread' }) });
      continue;
    }
    // A synchronous wait: the thread is busy, as it would be verifying a large receipt.
    if (file.endsWith('.stalls')) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, STALL_MS);
    verifyingShare([file], publicKeyPems, pipe, full);
  }
}
