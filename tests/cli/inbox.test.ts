// `interlock inbox ...` through the real binary (issue 13 §4), on items the gate opened in Redis: list and show print
// JSON; resolve and dismiss append a signed RESOLVED entry naming `--by` with the role `cli`; reapprove reads the
// payment's facts at Stripe (the sandbox) now and queues a new request; a second action is refused with exit 1
// naming who acted; bad input is one line on stderr, exit 2, and records nothing.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { effectIdFor, latestProposal, publicKeyPem, publicKeySet, verify, type Receipt } from '../../src/interlock.js';
import { approvalBody, bearer, TOKENS } from '../http/rig.js';
import { inboxCliSuite } from './inbox-cli-rig.js';
import { runCli, type CliRun } from './run-cli.js';
import { staleOnChargedBack } from './sandbox-items.js';

const { rig, make, stripe, cliKey, env } = inboxCliSuite('inbox', 'sk_test_inboxCli0001');

const json = (run: CliRun) => JSON.parse(run.stdout) as Record<string, unknown>;

/** The receipt, verified with the rig's key and the CLI's own. */
async function verified(effectId: string) {
  const receipt = (await rig.stores.journal.receipt(effectId)) as Receipt;
  return { receipt, verification: verify(receipt, { publicKeys: publicKeySet([publicKeyPem(rig.stores.signingKey), cliKey.publicPem]) }) };
}

function expectBadInput(run: CliRun, mentions: string): void {
  expect(run.code, run.stderr).toBe(2);
  expect(run.stdout).toBe('');
  expect(run.stderr.trimEnd().split('\n'), run.stderr).toHaveLength(1);
  expect(run.stderr).toContain(mentions);
}

// One process per call, and each starts the whole CLI: the calls run one after another, as few as cover each path.
describe('interlock inbox', { timeout: 180_000 }, () => {
  it('list and show print the open items as JSON; dismiss closes one with the note, naming --by with the role cli', async () => {
    const { item, effectId } = await make.stale();
    const listed = await runCli(['inbox', 'list', '--kind', 'stale_premise'], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect((json(listed).items as { id: string }[]).map((entry) => entry.id)).toContain(item);
    const shown = await runCli(['inbox', 'show', item], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(json(shown)).toMatchObject({ id: item, kind: 'stale_premise', effectId, centsAtStake: 2_000, changes: [{ field: 'chargebacks', was: [], now: ['du_opened'] }], status: 'open' });
    const dismissed = await runCli(['inbox', 'dismiss', item, '--note', 'Customer withdrew.', '--by', 'kim@support'], env);
    expect(dismissed.code, dismissed.stderr).toBe(0);
    expect(json(dismissed)).toMatchObject({ status: 'closed', closure: { action: 'dismiss', note: 'Customer withdrew.', by: { name: 'kim@support', role: 'cli' } } });
  });

  it('resolve --did-not-land records a signed entry naming --by; a second action exits 1 naming who acted', async () => {
    const { item, effectId } = await make.ambiguous();
    const resolved = await runCli(['inbox', 'resolve', item, '--did-not-land', '--note', 'Nothing on the payment in the dashboard.', '--by', 'lee@support'], env);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(json(resolved)).toMatchObject({ status: 'closed', closure: { action: 'resolve', resolution: 'did_not_land', by: { name: 'lee@support', role: 'cli' } } });
    const { verification } = await verified(effectId);
    expect(verification.problems).toEqual([]);
    expect(verification).toMatchObject({ valid: true, answer: 'not_returned', answerFrom: 'operator' });
    const again = await runCli(['inbox', 'dismiss', item, '--note', 'late to the party', '--by', 'kim@support'], env);
    expect(again.code, again.stderr).toBe(1);
    expect(again.stderr).toContain('lee@support (cli)');
    expect(again.stdout).toBe('');
  });

  it('reapprove reads the payment\'s facts at Stripe now and queues a new request under the new approval', async () => {
    const { paymentIntent, item, effectId, chargeback } = await staleOnChargedBack(stripe, make, rig);
    const approval = await make.grant(paymentIntent);
    // At the default log level (INTERLOCK_LOG_LEVEL unset), as an operator runs it: the answer on stdout, and
    // nothing on stderr (the service's info lines, such as the proposal it recorded, are not a command's output).
    const done = await runCli(['inbox', 'reapprove', item, '--approval', approval, '--by', 'lee@support', '--note', 'Refund anyway.'], { ...env, INTERLOCK_LOG_LEVEL: undefined });
    expect(done.code, done.stderr).toBe(0);
    expect(done.stderr).toBe('');
    const newId = effectIdFor({ requestId: `reapproval:${item}`, effect: null });
    expect(json(done)).toMatchObject({ effectId: newId, requestId: `reapproval:${item}`, recorded: 'recorded', premises: { chargebacks: [chargeback], refunded_by_others: 0, refundable: 5_000 } });
    expect(await latestProposal(rig.stores, newId)).toMatchObject({ approval, agent: 'lee@support', premises: { refundable: 5_000 }, effect: { paymentIntent, amount: 2_000 } });
    const { verification } = await verified(effectId);
    expect(verification).toMatchObject({ valid: true, operatorActions: [{ action: 'reapprove', by: { name: 'lee@support', role: 'cli' }, reapproval: { approval, effectId: newId } }] });
  });

  it('reapprove keeps the approval\'s four-eyes rule: the person it names as approver cannot re-approve under it (exit 1, item open, nothing proposed); someone else can', async () => {
    const { paymentIntent, item } = await staleOnChargedBack(stripe, make, rig);
    const approval = `ap_${randomBytes(5).toString('hex')}`;
    const granted = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approvalBody({ id: approval, approver: 'lee@support', scope: `payment:${paymentIntent}`, four_eyes: true }));
    expect(granted.status, JSON.stringify(granted.body)).toBe(201);
    const refused = await runCli(['inbox', 'reapprove', item, '--approval', approval, '--by', 'Lee@Support', '--note', 'My own approval.'], env);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toContain('asks for four eyes');
    expect(refused.stdout).toBe('');
    expect(await rig.stores.inbox.get(item)).toMatchObject({ status: 'open', closure: null });
    expect(await rig.stores.journal.partitionOf(effectIdFor({ requestId: `reapproval:${item}`, effect: null }))).toBeNull();
    const done = await runCli(['inbox', 'reapprove', item, '--approval', approval, '--by', 'kim@support', '--note', 'Second pair of eyes.'], env);
    expect(done.code, done.stderr).toBe(0);
    expect(json(done)).toMatchObject({ recorded: 'recorded', item: { closure: { action: 'reapprove', by: { name: 'kim@support', role: 'cli' } } } });
  });

  it('bad input is one line on stderr, exit 2; an action the item does not allow exits 1; neither records anything', async () => {
    const { item, effectId } = await make.ambiguous();
    expectBadInput(await runCli(['inbox', 'resolve', item, '--note', 'x', '--by', 'lee'], env), 'exactly one of --landed or --did-not-land');
    expectBadInput(await runCli(['inbox', 'dismiss', 'not-an-item', '--note', 'x', '--by', 'lee'], env), 'is not an inbox item id');
    const notAllowed = await runCli(['inbox', 'reapprove', item, '--approval', 'ap_x', '--by', 'lee'], env);
    expect(notAllowed.code, notAllowed.stderr).toBe(1);
    expect(notAllowed.stderr).toContain('cannot be re-approved');
    const { receipt } = await verified(effectId);
    expect(receipt.entries.some((entry) => entry.kind === 'RESOLVED')).toBe(false);
  });
});
