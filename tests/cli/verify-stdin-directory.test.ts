// Rule: every error message says what happened and what to do, in terms of what the operator gave. `receipt verify -`
// with standard input redirected from a directory (`< receipts/`, a slip for `receipts/*.json`) says standard input is
// a directory and to give its files as arguments, not "for example -/*.json", a path that names nothing.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { unknownSettings } from '../../src/config.js';
import { REPO, tempDir } from './run-cli.js';

const temp = tempDir('rv-cli67-stdin-dir');
afterAll(() => temp.remove());

it('standard input that is a directory is refused (exit 2) without advising `-/*.json`', async () => {
  const dir = join(temp.dir, 'receipts');
  mkdirSync(dir);
  const fd = openSync(dir, 'r');
  const runnerOnly = Object.fromEntries(unknownSettings(process.env).map(({ variable }) => [variable, undefined]));
  const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [join(REPO, 'bin', 'interlock.js'), 'receipt', 'verify', '-'], {
      cwd: REPO,
      env: { ...process.env, ...runnerOnly, INTERLOCK_LOG_LEVEL: 'silent', INTERLOCK_SIGNING_KEY_FILE: '', INTERLOCK_DATA_DIR: join(temp.dir, 'data') },
      stdio: [fd, 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk) => (stderr += String(chunk)));
    child.on('close', (code) => resolve({ code, stderr }));
  });
  closeSync(fd);
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr).not.toContain('-/*.json');
  expect(result.stderr).toContain('standard input is a directory; give the receipt files in it as arguments');
});
