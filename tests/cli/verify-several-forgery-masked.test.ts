// Rule: `receipt verify` of several files exits 1 when any receipt is invalid, even beside an unreadable file (a stray
// non-receipt picked up by `receipts/*`, a missing one): a forgery is never masked by an input problem's 2, and a
// script that raises the alarm on 1 hears of it. One file alone keeps its own code.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { REPO, runCli, tempDir } from './run-cli.js';

const temp = tempDir('rv-cli67-several');
afterAll(() => temp.remove());

it('a forged receipt among several files exits 1 even when another file is unreadable', async () => {
  const fixtures = join(REPO, 'tests', 'fixtures', 'receipts');
  const genuine = readFileSync(join(fixtures, 'committed.json'), 'utf8');
  writeFileSync(join(temp.dir, 'a-genuine.json'), genuine);
  writeFileSync(join(temp.dir, 'b-forged.json'), genuine.replace(/"amount": (\d+)/, (_m, n: string) => `"amount": ${Number(n) + 100000}`));
  writeFileSync(join(temp.dir, 'c-notes.txt'), 'receipts exported for the audit\n');
  const env = { INTERLOCK_DATA_DIR: join(temp.dir, 'data') };
  const key = ['--public-key', join(fixtures, 'public-key.pem')];
  const forgedAlone = await runCli(['receipt', 'verify', join(temp.dir, 'b-forged.json'), ...key], env);
  expect(forgedAlone.code, forgedAlone.stderr).toBe(1);
  const all = await runCli(['receipt', 'verify', '--threads', '1', join(temp.dir, 'a-genuine.json'), join(temp.dir, 'b-forged.json'), join(temp.dir, 'c-notes.txt'), ...key], env);
  expect(all.stdout).toContain('"status":"invalid"');
  expect(all.code, all.stderr).toBe(1);
});
