// Runs the real `interlock` binary as a child process, the way an auditor or operator would, with a private data
// directory so no key or file is ever written into the repository.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(REPO, 'bin', 'interlock.js');

export type CliRun = { code: number; stdout: string; stderr: string };

export function runCli(args: readonly string[], env: Record<string, string> = {}, options: { timeoutMs?: number } = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    const childEnv = { ...process.env, INTERLOCK_LOG_LEVEL: 'silent', INTERLOCK_SIGNING_KEY_FILE: '', ...env };
    execFile(process.execPath, [BIN, ...args], { cwd: REPO, env: childEnv, timeout: options.timeoutMs ?? 50_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** A temporary directory, removed by the returned cleanup. */
export function tempDir(label: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), `interlock-${label}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
