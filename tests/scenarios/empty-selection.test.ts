// Rule: bad arguments give a clear error (exit 2) before anything starts. `--rows ,` (or `--rows ""`, e.g. an unset
// shell variable) names no row at all; the refusal must say that, and which rows it could name, not "has both one of
// the rows  and one of the columns ." (empty lists). The same for --columns.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CAP_COLUMNS, CAP_ROWS } from '../../scenarios/shared-cap.js';
import { inTempDir, runCli } from '../cli/run-cli.js';

describe('interlock scenario --rows or --columns naming nothing', () => {
  it('refuses `--rows ""`, `--rows ,` and `--columns " , "` with exit 2, saying the list names none and which it could name, before anything starts', { timeout: 60_000 }, async () => {
    await inTempDir('scenario-empty-list', async (dir) => {
      const out = join(dir, 'out');
      const cases = [
        { flag: '--rows', value: '', says: `--rows names no row (it is empty, or only commas): give one or more of the rows of shared-cap, comma-separated (${CAP_ROWS.join(', ')})` },
        { flag: '--rows', value: ',', says: `--rows names no row (it is empty, or only commas): give one or more of the rows of shared-cap, comma-separated (${CAP_ROWS.join(', ')})` },
        { flag: '--columns', value: ' , ', says: `--columns names no column (it is empty, or only commas): give one or more of the columns of shared-cap, comma-separated (${CAP_COLUMNS.join(', ')})` },
      ];
      const runs = await Promise.all(cases.map(({ flag, value }) => runCli(['scenario', 'shared-cap', '--delays', 'fast', '--out', out, flag, value], { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined, TMPDIR: dir }, { timeoutMs: 30_000 })));
      runs.forEach((run, index) => {
        expect(run.code, run.stderr).toBe(2);
        expect(run.stderr).toContain(cases[index]?.says);
        expect(run.stderr).not.toMatch(/rows {2}and|columns \./);
      });
      // Refused before the --out probe and the private Redis: nothing written, no temporary directory of its own.
      expect(existsSync(out)).toBe(false);
      expect(readdirSync(dir).filter((name) => name.startsWith('interlock-'))).toEqual([]);
    });
  });
});
