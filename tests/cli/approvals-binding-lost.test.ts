// Rule: an approval that can still move money can always be revoked from the command line. On a cluster a failover of
// the index's master can lose an approval id's binding while the approval stands on its subject, where a dispatch
// reads it. `--subject` finds it there: `approvals describe` shows it (saying its id is not bound to it), `approvals
// revoke` revokes it and binds its id again, after which it is found by its id alone.
// The failover is simulated by deleting the binding field, which is what a replica that missed the HSETNX holds.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createKeys } from '../../src/redis/keys.js';
import { cliRig } from './cli-rig.js';
import { runCli } from './run-cli.js';

const { env, prefix, redis } = cliRig('binding-lost');

describe('approvals describe|revoke --subject', { timeout: 60_000 }, () => {
  it('finds, shows and revokes an approval whose id binding was lost, and binds its id again', async () => {
    const id = `ap_${randomBytes(4).toString('hex')}`;
    const subject = 'payment:pi_bindinglost';
    expect((await runCli(['approvals', 'grant', '--id', id, '--approver', 'dana', '--cap-cents', '100', '--scope', subject], env)).code).toBe(0);
    expect(await redis.hdel(createKeys(prefix).approvalPartitions, id)).toBe(1);

    expect((await runCli(['approvals', 'describe', id], env)).code).toBe(1);
    const shown = await runCli(['approvals', 'describe', id, '--subject', subject], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id, scope: subject, revoked: false });
    expect(shown.stderr).toContain(`approvals revoke ${id} --by <who> --subject ${subject}`);

    const elsewhere = await runCli(['approvals', 'revoke', id, '--by', 'lee', '--subject', 'payment:pi_elsewhere'], env);
    expect({ code: elsewhere.code, stderr: elsewhere.stderr.trim() }).toEqual({ code: 1, stderr: `No approval ${id} on payment:pi_elsewhere.` });
    expect((await runCli(['approvals', 'revoke', id, '--by', 'lee', '--subject', 'pi_1'], env)).code).toBe(2);

    const revoked = await runCli(['approvals', 'revoke', id, '--by', 'lee', '--subject', subject], env);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(JSON.parse(revoked.stdout)).toMatchObject({ alreadyRevoked: false, revokedBy: 'lee', rebound: true });

    const after = await runCli(['approvals', 'describe', id], env);
    expect(after.code, after.stderr).toBe(0);
    expect(after.stderr).toBe('');
    expect(JSON.parse(after.stdout)).toMatchObject({ revoked: true, revokedBy: 'lee' });
  });
});
