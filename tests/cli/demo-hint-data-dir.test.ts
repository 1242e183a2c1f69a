// Rule: a line the program prints for the user to run must work as printed from the same directory. README (line
// 77-78) holds `npm start` to this under another INTERLOCK_DATA_DIR: "the lines to try then carry
// `INTERLOCK_DATA_DIR=<dir> npx interlock …` and work as printed". `interlock demo` prints an export line too
// ("Export a receipt with `INTERLOCK_KEY_PREFIX=… npx interlock receipt export ID`"), but without the data dir, so
// run under `INTERLOCK_DATA_DIR=<dir> npx interlock demo` its line looks for the signing key in ./.data and refuses.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { REDIS_URL, removePrefixes } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const prefix = `rv-readme-${randomBytes(4).toString('hex')}`;
const data = tempDir('rv-readme-demo');
const out = tempDir('rv-readme-demo-out');
afterAll(async () => {
  data.remove();
  out.remove();
  await removePrefixes([prefix, `${prefix}-demo`]);
});

it('the export line `interlock demo` prints under another INTERLOCK_DATA_DIR works as printed', async () => {
  const shell = { REDIS_URL }; // what the user's shell has besides the one-off prefix
  const demo = await runCli(['demo'], { ...shell, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: data.dir }, { timeoutMs: 55_000 });
  expect(demo.code, demo.stderr).toBe(0);
  const line = /Export a receipt with `([^`]+)`/.exec(demo.stdout)?.[1];
  expect(line, demo.stdout).toBeDefined();
  // The printed line: VAR=value ... npx interlock receipt export ID
  const words = (line as string).split(/\s+/);
  const npx = words.indexOf('npx');
  const assignments = Object.fromEntries(words.slice(0, npx).map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]));
  const args = words.slice(npx + 2);
  const exported = await runCli([...args, '--out', join(out.dir, 'r.json')], { ...shell, INTERLOCK_DATA_DIR: undefined, INTERLOCK_KEY_PREFIX: undefined, ...assignments });
  expect(exported.code, exported.stderr).toBe(0);
  expect(line).toContain(`INTERLOCK_DATA_DIR=${data.dir}`);
}, 120_000);
