// Rule: a refusal names the setting the operator has to change. `serve` with an INTERLOCK_DATA_DIR it cannot make or
// write stops at start (exit 2) naming INTERLOCK_DATA_DIR and the directory, before anything starts: it used to fail
// later, on a file under it ("Could not create the directory …/keys"), naming no setting.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { inTempDir, runCli } from './run-cli.js';

it('serve with INTERLOCK_DATA_DIR under a file exits 2 naming INTERLOCK_DATA_DIR', async () => {
  await inTempDir('data-dir-unusable', async (dir) => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'not a directory\n');
    const dataDir = join(file, 'data');
    const run = await runCli(['serve', '--roles', 'worker'], { INTERLOCK_DATA_DIR: dataDir, REDIS_URL: 'redis://127.0.0.1:1', STRIPE_SECRET_KEY: 'sk_test_datadir', STRIPE_API_BASE: 'http://127.0.0.1:1' }, { timeoutMs: 15_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`The data directory ${dataDir} (INTERLOCK_DATA_DIR) cannot be used: a part of the path is a file, not a directory (ENOTDIR). Set INTERLOCK_DATA_DIR to a directory this user can write.`);
  });
}, 30_000);

it('serve with INTERLOCK_DATA_DIR naming a file exits 2 naming INTERLOCK_DATA_DIR', async () => {
  await inTempDir('data-dir-file', async (dir) => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'not a directory\n');
    const run = await runCli(['serve', '--roles', 'worker'], { INTERLOCK_DATA_DIR: file, REDIS_URL: 'redis://127.0.0.1:1', STRIPE_SECRET_KEY: 'sk_test_datadir', STRIPE_API_BASE: 'http://127.0.0.1:1' }, { timeoutMs: 15_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`The data directory ${file} (INTERLOCK_DATA_DIR) cannot be used: a file is already there (EEXIST)`);
  });
}, 30_000);

it('serve with INTERLOCK_DATA_DIR where no directory can be made (/proc/x) exits 2 naming it, instead of never returning (Node\'s recursive mkdir loops there)', async () => {
  const run = await runCli(['serve', '--roles', 'worker'], { INTERLOCK_DATA_DIR: '/proc/interlock-x/data', REDIS_URL: 'redis://127.0.0.1:1', STRIPE_SECRET_KEY: 'sk_test_datadir', STRIPE_API_BASE: 'http://127.0.0.1:1' }, { timeoutMs: 15_000 });
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr).toContain('The data directory /proc/interlock-x/data (INTERLOCK_DATA_DIR) cannot be used: no such file or directory (ENOENT).');
}, 30_000);
