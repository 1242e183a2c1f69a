// Rule: the project README's scenario tables link to the pages in scenarios/results, so `scenario readme` copies only
// that folder's index: `--out` naming another folder is refused (exit 2, saying why) and README.md is left as it was.
// It used to copy a scratch run's tables (one cell) over links to the committed pages (sixty).
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RESULTS_DIR } from '../../scenarios/run.js';
import { REPO, tempDir } from '../cli/run-cli.js';

const temp = tempDir('scenario-readme-only');
afterAll(() => temp.remove());

function cli(args: string[], cwd: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(REPO, 'bin', 'interlock.js'), ...args], { cwd, env: { ...process.env, INTERLOCK_LOG_LEVEL: 'silent' }, timeout: 40_000 }, (error, _stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stderr });
    });
  });
}

describe('scenario readme', { timeout: 60_000 }, () => {
  it('refuses the tables of a folder other than scenarios/results, README.md untouched', async () => {
    // A project copy (its README.md) and a scratch run's folder holding a valid index of its own.
    copyFileSync(join(REPO, 'README.md'), join(temp.dir, 'README.md'));
    const scratch = join(temp.dir, 'scratch');
    mkdirSync(scratch);
    writeFileSync(join(scratch, 'README.md'), readFileSync(join(RESULTS_DIR, 'README.md'), 'utf8').replace('60 cells', '1 cells'));
    const before = readFileSync(join(temp.dir, 'README.md'), 'utf8');
    const run = await cli(['scenario', 'readme', '--out', scratch], temp.dir);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`readme copies the tables of ${RESULTS_DIR} only`);
    expect(readFileSync(join(temp.dir, 'README.md'), 'utf8')).toBe(before);
  });
});
