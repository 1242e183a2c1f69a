// Rule: a receipt written by a newer interlock is refused with words that name what is newer (its format, or an
// entry's version and the versions this verifier knows), never as a bare "Invalid input": an auditor with an old
// verifier learns to upgrade it rather than to suspect the receipt.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Receipt } from '../../src/core/receipt.js';
import { publicKeySet } from '../../src/core/signing.js';
import { verify } from '../../src/core/verify.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures', 'receipts');
const receipt = JSON.parse(readFileSync(join(fixtures, 'committed.json'), 'utf8')) as Receipt;
const publicKeys = publicKeySet([readFileSync(join(fixtures, 'public-key.pem'), 'utf8')]);
const withEntryVersion = (v: unknown, count: number) => {
  const newer = structuredClone(receipt) as unknown as { entries: { v: unknown }[] };
  newer.entries.slice(0, count).forEach((entry) => (entry.v = v));
  return newer;
};

describe('a receipt a newer interlock wrote', () => {
  it('an entry of version 4 is refused, naming the version and the ones this verifier knows', () => {
    const result = verify(withEntryVersion(4, 1), { publicKeys });
    expect(result.valid).toBe(false);
    expect(result.problems).toContain('receipt is malformed at entries.0.v: entry version 4 is newer than this verifier knows (1 to 3): verify it with the interlock that wrote it, or a later one');
  });

  it('a version that is no version at all is not called newer', () => {
    for (const v of [0, 2.5, '3', null]) {
      const result = verify(withEntryVersion(v, 1), { publicKeys });
      expect(result.valid).toBe(false);
      expect(result.problems).toContain('receipt is malformed at entries.0.v: entry version is not 1, 2 or 3');
    }
  });

  it('the receipt as it was verifies (the fixture is sound)', () => {
    expect(verify(receipt, { publicKeys })).toMatchObject({ valid: true, problems: [] });
  });
});
