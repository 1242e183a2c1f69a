// Rule: a file read under a size cap (a receipt file, 32 MiB; a key file, 1 MiB) is never read past the cap, whatever
// its size said when it was checked: a file that grew since, or one whose size says nothing of its content (a /proc
// file reports 0), is refused as too large once it is found longer, instead of being read whole into memory.
import { appendFileSync, closeSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openRegularFile, readAtMost, readRegularFile } from '../src/files.js';
import { tempDir } from './cli/run-cli.js';

const temp = tempDir('read-at-most');
afterAll(() => temp.remove());

describe('reading a file under a cap', () => {
  it('refuses a file that grew past the cap after its size was checked', () => {
    const path = join(temp.dir, 'growing');
    writeFileSync(path, 'x'.repeat(10));
    const { fd, size } = openRegularFile(path, 100, 'a test file');
    try {
      appendFileSync(path, 'y'.repeat(5_000));
      expect(() => readAtMost(fd, size, 100, 'a test file')).toThrow(/more than the .* MiB a test file may be/);
    } finally {
      closeSync(fd);
    }
  });

  it.skipIf(process.platform !== 'linux')('refuses a /proc file longer than the cap, which reports a size of 0', () => {
    expect(() => readRegularFile('/proc/self/maps', 64, 'a test file')).toThrow(/more than the .* MiB a test file may be/);
  });

  it('reads a file within the cap whole, also one that grew and stays within it', () => {
    const path = join(temp.dir, 'within');
    writeFileSync(path, 'a'.repeat(70_000));
    expect(readRegularFile(path, 200_000, 'a test file')).toBe('a'.repeat(70_000));
    const { fd, size } = openRegularFile(path, 200_000, 'a test file');
    try {
      appendFileSync(path, 'b'.repeat(100_000));
      expect(readAtMost(fd, size, 200_000, 'a test file')).toBe(`${'a'.repeat(70_000)}${'b'.repeat(100_000)}`);
    } finally {
      closeSync(fd);
    }
  });
});
