// Runs the real `interlock` binary as a child process, the way an auditor or operator would, with a private data
// directory so no key or file is ever written into the repository.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { unknownSettings } from '../../src/config.js';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(REPO, 'bin', 'interlock.js');

export type CliRun = { code: number; stdout: string; stderr: string };

/** Runs the CLI quietly (INTERLOCK_LOG_LEVEL silent); an env value of undefined leaves that variable unset. `stdin` is written to its standard input, then closed. */
export function runCli(args: readonly string[], env: Record<string, string | undefined> = {}, options: { timeoutMs?: number; stdin?: string } = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    // The runner's own INTERLOCK_* variables (`npm test`'s outcome coverage) are not the command's settings, which
    // would say so on stderr: a command an operator runs has none of them. Those a test gives in `env` are kept.
    const runnerOnly = Object.fromEntries(unknownSettings(process.env).map(({ variable }) => [variable, undefined]));
    const childEnv = { ...process.env, ...runnerOnly, INTERLOCK_LOG_LEVEL: 'silent', INTERLOCK_SIGNING_KEY_FILE: '', ...env };
    const timeoutMs = options.timeoutMs ?? 50_000;
    const started = Date.now();
    const child = execFile(process.execPath, [BIN, ...args], { cwd: REPO, env: childEnv, timeout: timeoutMs }, (error, stdout, stderr) => {
      if (error === null || typeof error.code === 'number') {
        resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr });
        return;
      }
      // No exit code: a signal ended the process (this helper's timeout, a crash) or it never started. Say which in
      // its stderr, so a failed assertion on the code shows why.
      const elapsed = Date.now() - started;
      const why = error.signal ? `was ended by ${error.signal} after ${elapsed} ms${error.killed && elapsed >= timeoutMs ? ` (run-cli's ${timeoutMs} ms timeout)` : ''}` : `did not run: ${error.message}`;
      resolve({ code: -1, stdout, stderr: `${stderr}[run-cli] interlock ${args.join(' ')} ${why}\n` });
    });
    if (options.stdin !== undefined) child.stdin?.end(options.stdin);
  });
}

/** A temporary directory, removed by the returned cleanup. */
export function tempDir(label: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), `interlock-${label}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Runs `work` with a temporary directory of its own, removed afterwards whatever `work` did. */
export async function inTempDir<T>(label: string, work: (dir: string) => Promise<T>): Promise<T> {
  const temp = tempDir(label);
  try {
    return await work(temp.dir);
  } finally {
    temp.remove();
  }
}
