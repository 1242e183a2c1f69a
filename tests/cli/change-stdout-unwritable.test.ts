// Rule: a command that changed something and whose answer cannot be written (stdout on a full disk: ENOSPC, here
// /dev/full) says in one line on stderr what it changed and that it stands, and keeps the exit code its outcome set, as
// `refund` and `credit` do (README, The command line). `case` and `approvals grant` exited 1, which a script reads as
// "not done" and runs again: a grant under a new id, a case under a new case id decided and refunded twice.
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';
import { sharedRedisCli, spawnCli, type Spawned } from './money-rig.js';

const shared = sharedRedisCli('change-stdout');
const { env } = shared;
afterAll(() => shared.remove());

const tag = () => randomBytes(3).toString('hex');

/** Runs the CLI with its stdout on /dev/full. */
async function intoFullDisk(args: string[]): Promise<Spawned> {
  const full = openSync('/dev/full', 'w');
  try {
    return await spawnCli(args, env, { stdout: full });
  } finally {
    closeSync(full);
  }
}

function saidOnce(run: Spawned, ...names: string[]): void {
  expect(run.stderr).not.toMatch(/^\s+at\s/m);
  expect(run.stderr.trimEnd().split('\n'), run.stderr).toHaveLength(1);
  expect(run.stderr).toContain('Could not write to standard output');
  for (const name of names) expect(run.stderr).toContain(name);
}

describe('a command that changed something, whose stdout cannot be written', { timeout: 60_000 }, () => {
  it('approvals grant: exit 0, naming the approval granted and how to read it', async () => {
    const approval = `ap_full_${tag()}`;
    const run = await intoFullDisk(['approvals', 'grant', '--id', approval, '--approver', 'dana', '--cap-cents', '2000', '--scope', 'payment:pi_fullgrant']);
    saidOnce(run, `Approval ${approval} is granted`, `interlock approvals describe ${approval}`);
    expect(run.code, run.stderr).toBe(0);
    const described = await runCli(['approvals', 'describe', approval], env);
    expect(described.code, described.stderr).toBe(0);
  });

  it('approvals revoke: exit 0, naming the approval revoked', async () => {
    const approval = `ap_full_${tag()}`;
    expect((await runCli(['approvals', 'grant', '--id', approval, '--approver', 'dana', '--cap-cents', '2000', '--scope', 'payment:pi_fullrevoke'], env)).code).toBe(0);
    const run = await intoFullDisk(['approvals', 'revoke', approval, '--by', 'lee']);
    saidOnce(run, `Approval ${approval} is revoked, by lee`);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse((await runCli(['approvals', 'describe', approval], env)).stdout)).toMatchObject({ revoked: true, revokedBy: 'lee' });
  });

  it('caps set: exit 0, naming the cap set', async () => {
    const run = await intoFullDisk(['caps', 'set', 'payment:pi_fullcap', '700']);
    saidOnce(run, 'The shared cap on payment:pi_fullcap is set to 700 in the smallest unit of its currency');
    expect(run.code, run.stderr).toBe(0);
  });

  it('case: the exit code of the case as it stands (4: queued, no service here), naming the case stored and `case show`', async () => {
    const pi = `pi_fullcase${tag()}`;
    const approval = `ap_full_${tag()}`;
    expect((await runCli(['approvals', 'grant', '--id', approval, '--approver', 'dana', '--cap-cents', '2000', '--scope', `payment:${pi}`], env)).code).toBe(0);
    const caseId = `full-${tag()}`;
    const run = await intoFullDisk(['case', '--case', caseId, '--payment-intent', pi, '--story', 'arrived broken', '--approval', approval]);
    saidOnce(run, `Case ${caseId} is stored`, `interlock case show ${caseId}`);
    expect(run.code, run.stderr).toBe(4);
    const shown = await runCli(['case', 'show', caseId], env);
    expect(JSON.parse(shown.stdout)).toMatchObject({ state: 'queued' });
  });

  it('keys generate: exit 0, naming the key file written', async () => {
    const out = join(env.INTERLOCK_DATA_DIR ?? '', `key-${tag()}.pem`);
    const run = await intoFullDisk(['keys', 'generate', '--out', out]);
    saidOnce(run, `was written to ${out}`);
    expect(run.code, run.stderr).toBe(0);
    expect(existsSync(out)).toBe(true);
  });
});
