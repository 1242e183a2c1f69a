// Rule: a command whose answer could not be written, and which noted nothing it did (a read: approvals describe,
// effect show), exits 1 with one line on stderr (README, The command line): `interlock approvals describe ID > f &&
// use f` must not go on with an empty file. Only a command that noted what it did (refund, credit: whenOutputLost)
// keeps its outcome's exit code.
import { randomBytes } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';
import { sharedRedisCli, spawnCli } from './money-rig.js';

const shared = sharedRedisCli('ro-stdout');
const { env } = shared;
afterAll(() => shared.remove());

describe('a read-only command whose stdout cannot be written', { timeout: 60_000 }, () => {
  it('approvals describe > /dev/full exits 1, saying so in one line', async () => {
    const approval = `ap_ro_${randomBytes(3).toString('hex')}`;
    const granted = await runCli(['approvals', 'grant', '--id', approval, '--approver', 'dana', '--cap-cents', '2000', '--scope', 'payment:pi_rostdout1'], env);
    expect(granted.code, granted.stderr).toBe(0);
    const full = openSync('/dev/full', 'w');
    try {
      const run = await spawnCli(['approvals', 'describe', approval], env, { stdout: full });
      expect(run.stderr).toContain('Could not write to standard output');
      expect(run.code, `stderr: ${run.stderr}`).toBe(1);
      expect(run.stderr.trimEnd().split('\n'), run.stderr).toHaveLength(1);
    } finally {
      closeSync(full);
    }
  });
});
