// A key path that is not a regular file (a FIFO with no writer, a device) is refused as unreadable (exit 2) without
// waiting on it, as receipt files are: `receipt verify --public-key`, `keys public --key`, and the keys the commands
// and the service read from INTERLOCK_SIGNING_KEY_FILE and INTERLOCK_RETIRED_PUBLIC_KEYS_FILE used to be read with
// readFileSync, which waits for ever on a FIFO (and reads /dev/zero until memory runs out).
import { execFileSync } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO, runCli, tempDir } from './run-cli.js';

const temp = tempDir('key-file-not-regular');
const fifo = join(temp.dir, 'key.pem');
execFileSync('mkfifo', [fifo]);
const receipt = join(temp.dir, 'committed.json');
copyFileSync(join(REPO, 'tests/fixtures/receipts/committed.json'), receipt);
const env = { INTERLOCK_DATA_DIR: join(temp.dir, 'data') };
// Long enough for a command to start and refuse; a command that waits on the FIFO is ended by run-cli then.
const quick = { timeoutMs: 15_000 };

afterAll(() => temp.remove());

describe.concurrent('a key path that is a FIFO', { timeout: 60_000 }, () => {
  it('receipt verify --public-key FIFO is refused as unreadable (exit 2), naming what it is', async () => {
    const run = await runCli(['receipt', 'verify', receipt, '--public-key', fifo], env, quick);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr.trim()).toBe(`Cannot read public key ${fifo}: it is a FIFO (named pipe), not a regular file.`);
  });

  it('keys public --key FIFO is refused (exit 2), naming what it is', async () => {
    const run = await runCli(['keys', 'public', '--key', fifo], env, quick);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('it is a FIFO (named pipe), not a regular file');
  });

  it('receipt verify with INTERLOCK_SIGNING_KEY_FILE or INTERLOCK_RETIRED_PUBLIC_KEYS_FILE a FIFO is refused (exit 2)', async () => {
    const runs = await Promise.all([
      runCli(['receipt', 'verify', receipt], { ...env, INTERLOCK_SIGNING_KEY_FILE: fifo }, quick),
      runCli(['receipt', 'verify', receipt], { ...env, INTERLOCK_RETIRED_PUBLIC_KEYS_FILE: fifo }, quick),
    ]);
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain('it is a FIFO (named pipe), not a regular file');
    }
  });

  it('a command that loads the signing key (as the service does at start) refuses an INTERLOCK_SIGNING_KEY_FILE that is a FIFO (exit 2)', async () => {
    const run = await runCli(['effect', 'show', 'a'.repeat(64)], { ...env, INTERLOCK_SIGNING_KEY_FILE: fifo, REDIS_URL: 'redis://127.0.0.1:1' }, quick);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`INTERLOCK_SIGNING_KEY_FILE: Could not read the signing key ${fifo}: it is a FIFO (named pipe), not a regular file`);
  });
});
