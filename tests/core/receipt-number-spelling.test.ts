// Rule: a receipt that verifies cannot mean two different things: a number written other than as the canonical form
// writes it (1999.99999999999999999 or 2e3 for the signed 2000, 9007199254740993 for ...992) reads as the signed value
// to JSON.parse, which verify() hashes, and as another to a reader that keeps what is written (Python's Decimal, jq
// 1.7+, a person), so such a text is refused, saying where and what it reads as.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { publicKeySet } from '../../src/core/signing.js';
import { numbersSpelledOtherwise, verifyReceiptText } from '../../src/core/receipt-text.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/receipts/', import.meta.url));

function fixture(folder: string, name: string): { text: string; publicKeys: ReturnType<typeof publicKeySet> } {
  return { text: readFileSync(join(FIXTURES, folder, name), 'utf8'), publicKeys: publicKeySet([readFileSync(join(FIXTURES, folder, 'public-key.pem'), 'utf8')]) };
}

describe('a receipt whose numbers are spelled other than canonically', () => {
  const { text, publicKeys } = fixture('', 'committed.json');

  it('refuses the signed amount 2000 written as 1999.99999999999999999, naming the member, its line and what it reads as', () => {
    expect(text).toContain('"amount": 2000,');
    const respelled = text.replace('"amount": 2000,', '"amount": 1999.99999999999999999,');
    const line = text.slice(0, text.indexOf('"amount": 2000,')).split('\n').length;
    const result = verifyReceiptText(respelled, { publicKeys });
    expect(result.json).toBe(true);
    if (!result.json) return;
    expect(result.verification.valid).toBe(false);
    expect(result.verification.problems[0]).toMatch(new RegExp(`^receipt writes member "amount" as 1999\\.99999999999999999 at line ${line}, column \\d+, which JSON\\.parse reads as 2000, written 2000 in a receipt as exported: `));
  });

  it.each([
    ['2e3', '2000'],
    ['2000.0', '2000'],
    ['2.0e3', '2000'],
    ['20E2', '2000'],
  ])('refuses the signed amount 2000 written as %s', (written, reads) => {
    const result = verifyReceiptText(text.replace('"amount": 2000,', `"amount": ${written},`), { publicKeys });
    expect(result.json && result.verification.valid).toBe(false);
    expect(result.json && result.verification.problems).toEqual(expect.arrayContaining([expect.stringContaining(`as ${written} at line`)]));
    expect(result.json && result.verification.problems.join('\n')).toContain(`which JSON.parse reads as ${reads}, written ${reads} in a receipt as exported`);
  });

  it('names every spelling JSON.parse rounds or rewrites, and none the canonical form writes', () => {
    expect(numbersSpelledOtherwise('{"n": 9007199254740993}')).toEqual([expect.stringContaining('as 9007199254740993 at line 1, column 7, which JSON.parse reads as 9007199254740992, written 9007199254740992 in a receipt as exported')]);
    expect(numbersSpelledOtherwise('[-0, 1e400, 0.10, 1E+21]').map((problem) => problem.replace(/ at line \d+, column \d+/, '').replace(/: a reader.*/, ''))).toEqual([
      'receipt writes a number as -0, which JSON.parse reads as 0, written 0 in a receipt as exported',
      'receipt writes a number as 1e400, which JSON.parse reads as Infinity, a number no receipt holds',
      'receipt writes a number as 0.10, which JSON.parse reads as 0.1, written 0.1 in a receipt as exported',
      'receipt writes a number as 1E+21, which JSON.parse reads as 1e+21, written 1e+21 in a receipt as exported',
    ]);
    // A member's value names the member; an array's element, only where it is.
    expect(numbersSpelledOtherwise('{"name": "x", "list": [1.0]}\n')).toEqual([expect.stringMatching(/^receipt writes a number as 1\.0 at line 1, column 24,/)]);
    const canonical = [0, -1, 2000, 1796172085356, 9007199254740992, -9007199254740991, 0.1, -1.5, 1e21, 1e-7, 123456789012345680000, 5e-324, Number.MAX_VALUE];
    expect(numbersSpelledOtherwise(JSON.stringify({ canonical }, null, 2))).toEqual([]);
    // What strings hold is no number, whatever it looks like, escaped quotes and all.
    expect(numbersSpelledOtherwise(JSON.stringify({ 'a"1e3': '2e3 \\" -0 "0.10"', b: ['1.0', '\\'] }))).toEqual([]);
  });

  it.each([
    ['v3', ''],
    ['v2', 'v2'],
    ['v1', 'v1'],
  ])('leaves every %s receipt fixture, as exported, valid with no problem', (_version, folder) => {
    for (const name of ['committed.json', 'failed-refund.json', 'refused-at-recovery.json']) {
      const genuine = fixture(folder, name);
      const result = verifyReceiptText(genuine.text, { publicKeys: genuine.publicKeys });
      expect(result.json && { valid: result.verification.valid, problems: result.verification.problems }).toEqual({ valid: true, problems: [] });
      expect(numbersSpelledOtherwise(genuine.text)).toEqual([]);
    }
  });
});
