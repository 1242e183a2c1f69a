// Rule: a read whose answer cannot be written exits 1, never 0 with nothing written (README, The command line: "When
// standard output cannot be written (a full disk) … a read exits 1"), whenever the write error is heard: `receipt
// verify a.json b.json > report.txt && ship report.txt` must not go on with an empty report. Several files set their
// exit code once all are verified, after the write failed; that code must not replace the 1 a lost answer sets.
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from './run-cli.js';
import { spawnCli } from './money-rig.js';

const receipt = join(REPO, 'tests/fixtures/receipts/committed.json');
const key = join(REPO, 'tests/fixtures/receipts/public-key.pem');

describe('a read whose standard output is a full disk (/dev/full)', { timeout: 60_000 }, () => {
  for (const files of [[receipt], [receipt, receipt], [receipt, receipt, receipt]]) {
    it(`receipt verify of ${files.length} valid file(s) says so in one line and exits 1, not 0`, async () => {
      const full = openSync('/dev/full', 'w');
      try {
        const run = await spawnCli(['receipt', 'verify', ...files, '--public-key', key], {}, { stdout: full });
        expect(run.stderr).toContain('Could not write to standard output (ENOSPC');
        expect(run.stderr).toContain("so this command's answer was not printed");
        expect(run.code, `stderr: ${run.stderr}`).toBe(1);
      } finally {
        closeSync(full);
      }
    });
  }
});
