// Rule: `receipt verify FILE --public-key KEY` never tells the operator that no public key was given: when a key was
// given, stderr must not say "No public key was given or configured ... Pass --public-key FILE", whatever the receipt.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO, runCli, tempDir } from './run-cli.js';

const temp = tempDir('receipt-verify-key-given');
afterAll(() => temp.remove());
const FIXTURES = join(REPO, 'tests', 'fixtures', 'receipts');

describe('receipt verify with --public-key on a receipt that fails its shape check', () => {
  it('does not claim on stderr that no public key was given (a field added to the head; a JSON array)', async () => {
    const receipt = JSON.parse(readFileSync(join(FIXTURES, 'committed.json'), 'utf8')) as { head: Record<string, unknown> };
    receipt.head.note = 'approved by CFO';
    writeFileSync(join(temp.dir, 'extra-head-field.json'), JSON.stringify(receipt));
    writeFileSync(join(temp.dir, 'array.json'), '[]');
    const env = { INTERLOCK_DATA_DIR: join(temp.dir, 'data') };
    for (const name of ['extra-head-field.json', 'array.json']) {
      const run = await runCli(['receipt', 'verify', join(temp.dir, name), '--public-key', join(FIXTURES, 'public-key.pem')], env);
      expect(run.code, run.stderr).toBe(1);
      expect(JSON.parse(run.stdout)).toMatchObject({ valid: false, publicKeys: join(FIXTURES, 'public-key.pem') });
      // A key was given: telling the operator to "Pass --public-key FILE" is untrue.
      expect(run.stderr).not.toContain('No public key was given or configured');
    }
  });
});
