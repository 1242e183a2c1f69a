// Rule (src/cli/stores.ts withStores, src/interlock.ts openStores `retiredKeysWarned`): a command given a retired
// public keys file others can write says so in one plain line on stderr, as it says so of a signing key file others
// can read, whatever INTERLOCK_LOG_LEVEL is: never as a JSON log record, never dropped with the log level.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REDIS_URL, testKey } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('retired-warning-line');
afterAll(() => temp.remove());

describe('a command given a retired public keys file all users can write', { timeout: 60_000 }, () => {
  it('says so in one plain line on stderr at any log level', async () => {
    const dataDir = join(temp.dir, 'data');
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const keyFile = join(temp.dir, 'key.pem');
    writeFileSync(keyFile, testKey().privatePem, { mode: 0o600 });
    const retiredFile = join(temp.dir, 'retired.pem');
    writeFileSync(retiredFile, testKey().publicPem);
    chmodSync(retiredFile, 0o666);
    const env = { REDIS_URL, INTERLOCK_KEY_PREFIX: `retiredwarn${process.pid}`, INTERLOCK_DATA_DIR: dataDir, INTERLOCK_SIGNING_KEY_FILE: keyFile, INTERLOCK_RETIRED_PUBLIC_KEYS_FILE: retiredFile };
    // Unset (a command's own default, warnings), quiet, and asking for more.
    for (const level of ['', 'error', 'info']) {
      const run = await runCli(['approvals', 'describe', 'ap_none_here'], { ...env, INTERLOCK_LOG_LEVEL: level });
      const lines = run.stderr.split('\n').filter((line) => line.includes(`retired public keys file ${retiredFile}`));
      expect(lines, `${level}: ${run.stderr}`).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^The retired public keys file ${retiredFile} can be written by .*chmod 644 ${retiredFile}$`));
    }
  });
});
