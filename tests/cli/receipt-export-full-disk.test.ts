// Rule: `receipt export … --dir DIR` on a disk that fills half way says what stands: how many receipts were written and
// which (each whole, and each verifies on its own), which one could not be written and why, those not tried, and that
// the fix is room on that file system (or one that takes writes), not another path; it exits 1 (the export's "some not
// found"), not 2, which says nothing was done. A disk full at the first file writes nothing and exits 2, with the same
// advice. The full disk is simulated in the command's own process, as the file system gives it: the temporary file of
// the named receipt is made, then its write fails ENOSPC (a preload module replaces node:fs's openSync and writeSync).
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Receipt } from '../../src/core/receipt.js';
import { verify } from '../../src/core/verify.js';
import { fileSystemRefusal } from '../../src/cli/failure.js';
import { createWorld, type World } from '../support/harness.js';
import { committedRefund, FLOW_TIMING } from '../fixtures/receipt-flows.js';
import { runCli, tempDir } from './run-cli.js';

let world: World;
const ids: string[] = [];
const temp = tempDir('export-full-disk');
const file = (name: string) => join(temp.dir, name);
const id = (index: number) => ids[index] ?? '';

/** Loaded before the command: the write of the temporary file of FULL_DISK_AT (a receipt's file name) fails ENOSPC. */
const PRELOAD = `
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
const real = { openSync: fs.openSync, writeSync: fs.writeSync, closeSync: fs.closeSync };
const full = new Set();
const marker = '/.' + process.env.FULL_DISK_AT + '.';
fs.openSync = (path, ...rest) => {
  const fd = real.openSync(path, ...rest);
  if (typeof path === 'string' && path.includes(marker) && path.endsWith('.tmp')) full.add(fd);
  return fd;
};
fs.writeSync = (fd, ...rest) => {
  if (full.has(fd)) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
  return real.writeSync(fd, ...rest);
};
fs.closeSync = (fd) => {
  full.delete(fd);
  real.closeSync(fd);
};
syncBuiltinESMExports();
`;

beforeAll(async () => {
  world = await createWorld({ config: FLOW_TIMING });
  for (const name of ['export_full_1', 'export_full_2', 'export_full_3']) ids.push((await committedRefund(world, name)).effectId);
  writeFileSync(file('signing-key.pem'), world.key.privatePem, { mode: 0o600 });
  writeFileSync(file('full-disk.mjs'), PRELOAD);
});

afterAll(async () => {
  await world?.close();
  temp.remove();
});

const env = (fullAt?: string) => ({
  INTERLOCK_DATA_DIR: file('data'),
  REDIS_URL: world.config.redisUrl,
  INTERLOCK_KEY_PREFIX: world.config.keyPrefix,
  INTERLOCK_SIGNING_KEY_FILE: file('signing-key.pem'),
  ...(fullAt === undefined ? {} : { NODE_OPTIONS: `--import=${pathToFileURL(file('full-disk.mjs')).href}`, FULL_DISK_AT: fullAt }),
});

describe('receipt export --dir on a disk that fills', { timeout: 60_000 }, () => {
  it('half way: says which receipts stand, which failed and why, which were not tried, to free space; exit 1', async () => {
    const dir = file('half');
    const run = await runCli(['receipt', 'export', id(0), id(1), id(2), '--dir', dir], env(`${id(1)}.json`));
    expect(run.stderr.trim()).toBe(
      `1 of 3 receipts written to ${dir} (${id(0)}.json), each whole; ${id(1)}.json could not be written: no space left on the device (ENOSPC), and 1 more not tried (${id(2)}.json). Free space on that file system (or write to one that has room), then run the same export again: it replaces the files written with fresh ones.`,
    );
    expect(run.code).toBe(1);
    expect(readdirSync(dir)).toEqual([`${id(0)}.json`]);
    const written = JSON.parse(readFileSync(join(dir, `${id(0)}.json`), 'utf8')) as Receipt;
    expect(verify(written, { publicKeys: world.key.publicKeys })).toMatchObject({ valid: true, problems: [] });

    // Run again with room: every receipt is written, the one there replaced.
    const again = await runCli(['receipt', 'export', id(0), id(1), id(2), '--dir', dir], env());
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr.trim()).toBe(`3 receipts written to ${dir}`);
    expect(readdirSync(dir).sort()).toEqual([id(0), id(1), id(2)].map((effectId) => `${effectId}.json`).sort());
  });

  it('at the first receipt: nothing is written, exit 2, and the advice is room, not another path', async () => {
    const dir = file('first');
    mkdirSync(dir);
    const run = await runCli(['receipt', 'export', id(0), id(1), '--dir', dir], env(`${id(0)}.json`));
    expect(run.stderr.trim()).toBe(`Could not write ${join(dir, `${id(0)}.json`)}: no space left on the device (ENOSPC). Free space on that file system (or write to one that has room).`);
    expect(run.code).toBe(2);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('what a refusal of the file system asks of the operator', () => {
  const refusal = (code: string) => fileSystemRefusal(Object.assign(new Error(code), { code }));

  it('a full disk or quota asks for room, a read-only file system for a writable one; a refusal on the path itself gives no remedy (another path is one)', () => {
    expect(refusal('ENOSPC')?.remedy).toMatch(/^Free space on that file system/);
    expect(refusal('EDQUOT')).toEqual({ meaning: "this user's disk quota there is used up (EDQUOT)", remedy: expect.stringMatching(/^Free space within this user's quota/) });
    expect(refusal('EROFS')?.remedy).toMatch(/file system that takes writes/);
    expect(refusal('EACCES')).toEqual({ meaning: 'permission denied (EACCES)', remedy: null });
    expect(refusal('ECONNRESET')).toBeNull();
  });
});
