// Rule: `interlock approvals grant` refuses the approval ids "." and ".." as the support API does, saying why (a URL
// reads them as steps of its path, so the approval's own links could never reach it) and writing nothing; an
// approval an earlier version stored under one is still described and revoked by the CLI, the one way left to
// revoke it. A cap too large for the CLI is told its range, as the API tells it.
import { expect, it } from 'vitest';
import { assertPartition, createKeys } from '../../src/redis/keys.js';
import { createScriptRunner } from '../../src/redis/scripts.js';
import { cliRig } from './cli-rig.js';
import { runCli } from './run-cli.js';

const { env, prefix, redis } = cliRig('approval-dot-ids');

it.each(['.', '..'])('approvals grant --id "%s" is refused with exit 2, says why, and writes nothing', async (id) => {
  const run = await runCli(['approvals', 'grant', '--id', id, '--approver', 'dana@support', '--cap-cents', '3000', '--scope', 'payment:pi_dot'], env);
  expect(run.code, run.stderr).toBe(2);
  expect(run.stdout).toBe('');
  expect(run.stderr).toContain('id may not be . or ..: a URL reads them as steps of its path');
  expect(run.stderr).toContain('use another id');
  expect(await redis.keys(`${prefix}:*`)).toEqual([]);
}, 60_000);

it('an approval stored under ".." before the rule is described and revoked by the CLI', async () => {
  // Written as a grant wrote it before the rule: the same binding and the same script.
  const keys = createKeys(prefix);
  const terms = { id: '..', approver: 'dana@support', capCents: 3_000, expiresAt: Date.UTC(2099, 0, 1), maxUses: 1, scope: 'payment:pi_dotstored' };
  const partition = assertPartition(terms.scope);
  await redis.hsetnx(keys.approvalPartitions, terms.id, partition);
  await createScriptRunner(redis)('grant-approval-1', [keys.approval(partition, terms.id)], [JSON.stringify(terms), '']);

  const described = await runCli(['approvals', 'describe', '..'], env);
  expect(described.code, described.stderr).toBe(0);
  expect(JSON.parse(described.stdout)).toMatchObject({ id: '..', revoked: false });
  const revoked = await runCli(['approvals', 'revoke', '..', '--by', 'dana@support'], env);
  expect(revoked.code, revoked.stderr).toBe(0);
  expect(JSON.parse(revoked.stdout)).toMatchObject({ alreadyRevoked: false });
  expect(JSON.parse((await runCli(['approvals', 'describe', '..'], env)).stdout)).toMatchObject({ id: '..', revoked: true });
}, 90_000);

it('approvals grant --cap-cents 100000000000000000000 is told the range, not only that it is not whole', async () => {
  const run = await runCli(['approvals', 'grant', '--id', 'ap_huge', '--approver', 'dana@support', '--cap-cents', '100000000000000000000', '--scope', 'payment:pi_dot'], env);
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr).toContain(`from 1 to ${Number.MAX_SAFE_INTEGER}`);
}, 60_000);
