// Rule: `interlock inbox show` prints the fingerprint of the facts the item shows (factsShown), and `interlock inbox
// reapprove --facts-shown HASH` stands on the facts that showed: once the item shows others (someone else's refused
// re-approval brought it up to date), it is refused (exit 1, facts_changed), nothing recorded; on the facts it shows, it
// is recorded. A malformed HASH is bad input (exit 2).
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/interlock.js';
import { bearer, TOKENS } from '../http/rig.js';
import { inboxCliSuite } from './inbox-cli-rig.js';
import { runCli, type CliRun } from './run-cli.js';
import { staleOnChargedBack } from './sandbox-items.js';

const { rig, make, stripe, env } = inboxCliSuite('inbox-facts-shown', 'sk_test_inboxFactsShown1');

const json = (run: CliRun) => JSON.parse(run.stdout) as Record<string, unknown>;
const recorded = async (item: string) => (await rig.stores.journal.partitionOf(effectIdFor({ requestId: `reapproval:${item}`, effect: null }))) !== null;

describe('interlock inbox reapprove --facts-shown', { timeout: 180_000 }, () => {
  it('is refused once the item shows other facts than `inbox show` printed, and recorded on the ones it shows', async () => {
    const { paymentIntent, item, chargeback } = await staleOnChargedBack(stripe, make, rig);
    const approval = await make.grant(paymentIntent);
    const shown = await runCli(['inbox', 'show', item], env);
    expect(shown.code, shown.stderr).toBe(0);
    const before = json(shown).factsShown as string;
    expect(before).toMatch(/^[0-9a-f]{16}$/);
    expect((await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver))).body.facts_shown).toBe(before);

    // Someone else's re-approval over the API finds a second chargeback and brings the item up to date.
    rig.target.world.set(`payment:${paymentIntent}`, { chargebacks: [chargeback, 'du_second'], refunded_by_others: 0 });
    const other = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.approver)).send({ approval, note: 'refund anyway' });
    expect(other.body.error?.code).toBe('facts_changed');
    const refused = await runCli(['inbox', 'reapprove', item, '--approval', approval, '--by', 'lee@support', '--facts-shown', before], env);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toContain('shows other facts than it did when it was read');
    expect(refused.stdout).toBe('');
    expect(await recorded(item)).toBe(false);
    expectBadInput(await runCli(['inbox', 'reapprove', item, '--approval', approval, '--by', 'lee@support', '--facts-shown', 'not-a-hash'], env));

    // An item showing what Stripe holds, re-approved on the fingerprint `inbox show` printed.
    const fresh = await staleOnChargedBack(stripe, make, rig);
    const facts = json(await runCli(['inbox', 'show', fresh.item], env)).factsShown as string;
    const done = await runCli(['inbox', 'reapprove', fresh.item, '--approval', await make.grant(fresh.paymentIntent), '--by', 'lee@support', '--facts-shown', facts], env);
    expect(done.code, done.stderr).toBe(0);
    expect(json(done)).toMatchObject({ recorded: 'recorded', premises: { chargebacks: [fresh.chargeback], refunded_by_others: 0 } });
  });
});

function expectBadInput(run: CliRun): void {
  expect(run.code, run.stderr).toBe(2);
  expect(run.stdout).toBe('');
  expect(run.stderr).toContain('--facts-shown');
}
