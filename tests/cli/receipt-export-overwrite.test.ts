// Rule: `receipt export` never replaces a file the operator did not mean to replace, and never leaves half a file.
// `--out FILE` refuses a file already there (exit 2, the file byte for byte as it was, a line naming it and saying to
// give a new path, move it aside or pass --force), so a slip of tab completion onto the signing key cannot leave the
// service unable to sign; `--force` replaces it whole. `--dir DIR` replaces an earlier export of the same effect's
// receipt (exporting into one directory again as receipts grow is its daily use) and refuses, unless --force, any
// other file where a receipt goes, replacing nothing. A directory is never replaced, even with --force. A receipt
// written to --out is named on standard error, so the command never finishes in silence.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Receipt } from '../../src/core/receipt.js';
import { verify } from '../../src/core/verify.js';
import { createWorld, type World } from '../support/harness.js';
import { committedRefund, FLOW_TIMING } from '../fixtures/receipt-flows.js';
import { runCli, tempDir } from './run-cli.js';

let world: World;
let effectIds: string[] = [];
let receipt: Receipt;
const temp = tempDir('export-overwrite');
const file = (name: string) => join(temp.dir, name);

beforeAll(async () => {
  world = await createWorld({ config: FLOW_TIMING });
  const first = await committedRefund(world, 'export_overwrite_1');
  receipt = first.receipt;
  effectIds = [first.effectId, (await committedRefund(world, 'export_overwrite_2')).effectId];
  // The exporter signs with the service's key; the key file is written once, read by every test's process.
  writeFileSync(file('signing-key.pem'), world.key.privatePem, { mode: 0o600 });
});

afterAll(async () => {
  await world?.close();
  temp.remove();
});

const env = () => ({ INTERLOCK_DATA_DIR: file('data'), REDIS_URL: world.config.redisUrl, INTERLOCK_KEY_PREFIX: world.config.keyPrefix, INTERLOCK_SIGNING_KEY_FILE: file('signing-key.pem') });
const id = (index: number) => effectIds[index] ?? '';
const exportedIn = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Receipt;
/** Files a write left in `dir` besides the ones expected: a temporary file never outlives the command. */
const strays = (dir: string) => readdirSync(dir).filter((name) => name.endsWith('.tmp'));

describe.concurrent('receipt export --out', { timeout: 60_000 }, () => {
  it('refuses the signing key file itself (exit 2), leaving the key byte for byte and the service able to sign', async () => {
    const key = readFileSync(file('signing-key.pem'));
    const run = await runCli(['receipt', 'export', id(0), '--out', file('signing-key.pem')], env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim()).toBe(`${file('signing-key.pem')} already exists; nothing was written. Give --out a new path, move that file aside, or pass --force to replace it.`);
    expect(readFileSync(file('signing-key.pem')).equals(key)).toBe(true);
    const after = await runCli(['receipt', 'export', id(0)], env());
    expect(after.code, after.stderr).toBe(0);
  });

  it('refuses a receipt exported before, of another effect; --force replaces it whole, and it verifies', async () => {
    const dir = file('out-force');
    mkdirSync(dir);
    const out = join(dir, 'receipt.json');
    const first = await runCli(['receipt', 'export', id(0), '--out', out], env());
    expect(first.code, first.stderr).toBe(0);
    // A write to a file says where it went (standard output stays empty: the receipt is in the file).
    expect(first.stdout).toBe('');
    expect(first.stderr.trim()).toBe(`receipt written to ${out}`);
    const kept = readFileSync(out);
    const refused = await runCli(['receipt', 'export', id(1), '--out', out], env());
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`${out} already exists`);
    expect(readFileSync(out).equals(kept)).toBe(true);
    const forced = await runCli(['receipt', 'export', id(1), '--out', out, '--force'], env());
    expect(forced.code, forced.stderr).toBe(0);
    expect(exportedIn(out).effectId).toBe(id(1));
    expect(verify(exportedIn(out), { publicKeys: world.key.publicKeys })).toMatchObject({ valid: true, problems: [] });
    expect(readdirSync(dir)).toEqual(['receipt.json']);
  });

  it('refuses a directory, even with --force, pointing to --dir', async () => {
    const dir = file('a-directory');
    mkdirSync(dir);
    const run = await runCli(['receipt', 'export', id(0), '--out', dir, '--force'], env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr.trim()).toBe(`--out ${dir} is a directory; nothing was written. --out takes the path of a file to write (for one file per receipt, give --dir DIR).`);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe.concurrent('receipt export --dir', { timeout: 60_000 }, () => {
  it('replaces an earlier export of the same receipt (it grew since), writing each file whole', async () => {
    const dir = file('daily');
    mkdirSync(dir);
    // An earlier export, from before the later entries were recorded.
    writeFileSync(join(dir, `${id(0)}.json`), JSON.stringify({ ...receipt, entries: receipt.entries.slice(0, 2) }, null, 2));
    const run = await runCli(['receipt', 'export', id(0), id(1), '--dir', dir], env());
    expect(run.code, run.stderr).toBe(0);
    expect(exportedIn(join(dir, `${id(0)}.json`)).entries).toHaveLength(receipt.entries.length);
    const again = await runCli(['receipt', 'export', id(0), id(1), '--dir', dir], env());
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr.trim()).toBe(`2 receipts written to ${dir}`);
    expect(strays(dir)).toEqual([]);
  });

  it('refuses a file where a receipt goes that is not an earlier export of that receipt, replacing nothing; --force replaces it', async () => {
    const dir = file('foreign');
    mkdirSync(dir);
    const other = join(dir, `${id(1)}.json`);
    // The receipt of effect 0, saved under effect 1's name.
    writeFileSync(other, JSON.stringify(receipt));
    const kept = readFileSync(other);
    const run = await runCli(['receipt', 'export', id(0), id(1), '--dir', dir], env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr.trim()).toBe(`${other} is already there and is not an earlier export of effect ${id(1)}'s receipt (it is the receipt of effect ${id(0)}); nothing was written. Move it aside, give another --dir, or pass --force to replace it.`);
    expect(readFileSync(other).equals(kept)).toBe(true);
    expect(readdirSync(dir)).toEqual([`${id(1)}.json`]);
    writeFileSync(join(dir, `${id(0)}.json`), 'notes, not a receipt');
    const note = await runCli(['receipt', 'export', id(0), '--dir', dir], env());
    expect(note.code, note.stderr).toBe(2);
    expect(note.stderr).toContain('(it is not JSON)');
    const forced = await runCli(['receipt', 'export', id(0), id(1), '--dir', dir, '--force'], env());
    expect(forced.code, forced.stderr).toBe(0);
    expect([exportedIn(join(dir, `${id(0)}.json`)).effectId, exportedIn(other).effectId]).toEqual([id(0), id(1)]);
    expect(strays(dir)).toEqual([]);
  });
});
