// Rule: `interlock case --wait` stopped by a signal (Ctrl-C, a kill, a closed terminal) once the case may be stored
// never ends silently: it says in one line that the case is stored and queued, names `interlock case show ID`, and
// exits 4, as refund and credit do. A service started later decides it and refunds: killed silently, an operator
// re-submits it under a new case id and two refunds go out.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';
import { sharedRedisCli, spawnCli, until } from './money-rig.js';

const shared = sharedRedisCli('case-stop', { INTERLOCK_UNSAFE_DURABILITY: '1' });
const { env } = shared;
afterAll(() => shared.remove());

describe('case --wait stopped by a signal', { timeout: 90_000 }, () => {
  it('SIGINT once the case is stored and queued: says so and exits 4 (not killed silently by the signal)', async () => {
    const pi = `pi_casestop${randomBytes(4).toString('hex')}`;
    const approval = `ap_casestop_${randomBytes(3).toString('hex')}`;
    const granted = await runCli(['approvals', 'grant', '--id', approval, '--approver', 'dana', '--cap-cents', '2000', '--scope', `payment:${pi}`], env);
    expect(granted.code, granted.stderr).toBe(0);
    const caseId = `case-stop-${randomBytes(3).toString('hex')}`;
    // No service runs under this prefix: the case stays queued, and the command waits.
    const run = await spawnCli(['case', '--case', caseId, '--payment-intent', pi, '--story', 'The jar arrived cracked.', '--approval', approval, '--wait', '60'], env, {
      during: (child) => {
        void until('the case is stored', async () => (await runCli(['case', 'show', caseId], env)).code !== 1).then(() => child.kill('SIGINT'));
      },
    });
    const shown = await runCli(['case', 'show', caseId], env);
    // The case is stored and queued: a service started later decides it and refunds.
    expect(shown.stdout).toContain('"queued"');
    expect(run.signal, `stderr: ${JSON.stringify(run.stderr)}`).toBeNull();
    expect(run.code).toBe(4);
    expect(run.stderr.trimEnd().split('\n'), run.stderr).toHaveLength(1);
    expect(run.stderr).toContain('Stopped by SIGINT');
    expect(run.stderr).toContain(`case ${caseId} is stored and queued`);
    expect(run.stderr).toContain(`interlock case show ${caseId}`);
  });
});
