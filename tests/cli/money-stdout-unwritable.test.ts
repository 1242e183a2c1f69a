// Rule: a failure is always one line on standard error, never a stack trace (README, The command line), and a refund
// whose answer cannot be written (stdout on a full disk: ENOSPC, here /dev/full) keeps the exit code its outcome set:
// committed is not exit 1, which a script would read as failed and send again under a new request id. The line names
// the effect, its outcome and `interlock effect show --request ID`.
import { closeSync, openSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';
import { paymentWithApproval, refundsAt, spawnCli, startMoneyRig, type MoneyRig, type Spawned } from './money-rig.js';

let rig: MoneyRig;
beforeAll(async () => {
  rig = await startMoneyRig('stdout-full');
}, 90_000);
afterAll(async () => {
  await rig?.stop();
});

describe('refund --wait with stdout on a full disk', { timeout: 120_000 }, () => {
  it('committed: one line on stderr naming the effect and its outcome, no stack trace, exit 0 as committed', async () => {
    const { pi, approval } = await paymentWithApproval(rig);
    const request = `full-${randomBytes(3).toString('hex')}`;
    const full = openSync('/dev/full', 'w');
    let run: Spawned;
    try {
      run = await spawnCli(['refund', '--request', request, '--payment-intent', pi, '--amount', '1500', '--approval', approval, '--wait', '30'], rig.env, { stdout: full });
    } finally {
      closeSync(full);
    }
    expect(await refundsAt(rig, pi)).toEqual([1500]);
    const shown = await runCli(['effect', 'show', '--request', request], rig.env);
    const effect = JSON.parse(shown.stdout) as { effectId: string; outcome: string };
    expect(effect.outcome).toBe('COMMITTED');
    expect(run.stderr).not.toMatch(/^\s+at\s/m);
    expect(run.stderr.trimEnd().split('\n'), run.stderr).toHaveLength(1);
    expect(run.stderr).toContain('Could not write to standard output');
    expect(run.stderr).toContain(`Effect ${effect.effectId} is recorded with outcome COMMITTED`);
    expect(run.stderr).toContain(`interlock effect show --request ${request}`);
    expect(run.code).toBe(0);
  });
});
