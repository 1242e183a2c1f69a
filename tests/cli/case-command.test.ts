// `interlock case` and `interlock case show`, run as the real binary against a service's Redis (the cases rig: the
// sandbox, the effects and decisions workers in this process, under a private key prefix). One JSON object on
// stdout; exit 0 committed, 5 committed but the money did not go back (Stripe failed the refund), 3 declined or
// MODEL_DEVIATED, 4 not decided or not settled within --wait, 2 bad input (nothing stored), 1 an unknown case; a case
// re-approved from the inbox exits as its re-approved effect.
import request from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import { reconcileAll } from '../../queues/facts.js';
import { createFacts, createFactsReader } from '../../src/interlock.js';
import { replies } from '../decider/messages-server.js';
import { disputeOf } from '../facts/facts-rig.js';
import { bearer, TOKENS, uid } from '../http/rig.js';
import { pay } from '../stripe/stripe-support.js';
import { REDIS_URL } from '../support/harness.js';
import { casesSuite, modelDecider } from '../support/cases-rig.js';
import { runCli, tempDir } from './run-cli.js';

const { rig, server } = casesSuite();
const data = tempDir('case-cli');
afterAll(() => {
  data.remove();
});

const cli = (args: string[]) => runCli(args, { REDIS_URL, INTERLOCK_KEY_PREFIX: rig.prefix, INTERLOCK_DATA_DIR: data.dir, INTERLOCK_UNSAFE_DURABILITY: '1' });
const story = 'The jar arrived cracked; support approved a $20 goodwill refund.';

describe('interlock case', () => {
  it('decides, proposes and commits a refund with --wait (exit 0); case show prints the same case', { timeout: 120_000 }, async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const caseId = `case-${uid()}`;
    const run = await cli(['case', '--case', caseId, '--payment-intent', paymentIntent, '--story', story, '--approval', approval, '--wait', '20']);
    expect(run.code, run.stderr).toBe(0);
    const shown = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({ object: 'case', id: caseId, state: 'proposed', outcome: 'COMMITTED', agent: 'cli', decision: { model: 'rules', amount_cents: 2_000 } });
    expect((await rig.refundsAt(paymentIntent)).map((refund) => refund.amount)).toEqual([2_000]);
    const show = await cli(['case', 'show', caseId]);
    expect(show.code, show.stderr).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({ id: caseId, state: 'proposed', outcome: 'COMMITTED' });
  });

  it('MODEL_DEVIATED exits 3 with the problems and the refused effect a person acts on, and nothing reaches Stripe', { timeout: 120_000 }, async () => {
    rig.useDecider(modelDecider(server));
    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 3000, reason: 'More feels fair.' }));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const run = await cli(['case', '--case', `case-${uid()}`, '--payment-intent', paymentIntent, '--story', story, '--approval', approval, '--wait', '20']);
    expect(run.code, run.stderr).toBe(3);
    const shown = JSON.parse(run.stdout) as { effect: { effect_id: string }; links: { inbox: string } };
    expect(shown).toMatchObject({ state: 'deviated', outcome: 'MODEL_DEVIATED', effect: { state: 'refused', outcome: 'REFUSED:lease' } });
    expect(shown.links.inbox).toBe(`/v1/inbox/model_deviated:${shown.effect.effect_id}`);
    expect(await rig.refundsAt(paymentIntent)).toEqual([]);
  });

  it('case show exits 5, not 0, once Stripe failed the refund it had accepted (final money not_returned)', { timeout: 120_000 }, async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_createDisputeInquiry', 10_000);
    const approval = `ap_${uid()}`;
    await rig.stores.approvals.grant({ id: approval, approver: 'support-lead', capCents: 2_000, scope: `payment:${paymentIntent}`, expiresAt: Date.now() + 3_600_000, maxUses: 1 });
    const caseId = `case-${uid()}`;
    const run = await cli(['case', '--case', caseId, '--payment-intent', paymentIntent, '--story', story, '--approval', approval, '--wait', '20']);
    expect(run.code, run.stderr).toBe(0);
    const inquiry = await disputeOf(rig.stripe, paymentIntent);
    await rig.world.sandbox.control.request('POST', `/disputes/${inquiry.id}/escalate`);
    await reconcileAll(rig.stores, createFacts(rig.stores, createFactsReader(rig.world.client)), Date.now() - 3_600_000);
    const show = await cli(['case', 'show', caseId]);
    expect(show.code, show.stderr).toBe(5);
    const shown = JSON.parse(show.stdout) as { effect: { effect_id: string } };
    expect(shown).toMatchObject({ id: caseId, state: 'proposed', outcome: 'COMMITTED', final_money: { status: 'not_returned' } });
    // The effect itself answers the same way.
    const effect = await cli(['effect', 'show', shown.effect.effect_id]);
    expect(effect.code, effect.stderr).toBe(5);
    expect(JSON.parse(effect.stdout)).toMatchObject({ outcome: 'COMMITTED', finalMoney: { status: 'not_returned' } });
  });

  it('a MODEL_DEVIATED case re-approved from the inbox exits as its re-approved effect: 0 once that refund committed', { timeout: 120_000 }, async () => {
    rig.useDecider(modelDecider(server));
    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 3000, reason: 'Jar and lid both cracked; $30.' }));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const caseId = `case-${uid()}`;
    const run = await cli(['case', '--case', caseId, '--payment-intent', paymentIntent, '--story', story, '--approval', approval, '--wait', '20']);
    expect(run.code, run.stderr).toBe(3);
    const deviated = JSON.parse(run.stdout) as { links: { inbox: string } };
    const fresh = `ap_${uid()}`;
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: fresh, approver: 'lee', cap_cents: 3_000, scope: `payment:${paymentIntent}` })).status).toBe(201);
    const reapproved = await request(rig.app).post(`${deviated.links.inbox}/reapprove`).set(bearer(TOKENS.approver)).send({ approval: fresh, note: '$30 is right.' });
    expect(reapproved.status, JSON.stringify(reapproved.body)).toBe(202);
    expect(await rig.effects.waitFor(String(reapproved.body.effect_id), 15_000)).toMatchObject({ outcome: 'COMMITTED' });
    const show = await cli(['case', 'show', caseId]);
    expect(show.code, show.stderr).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({ id: caseId, state: 'deviated', outcome: 'COMMITTED', reapprovals: [{ effect_id: reapproved.body.effect_id }] });
  });

  it('bad input exits 2 and stores nothing; an unknown case exits 1', { timeout: 200_000 }, async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const caseId = `case-${uid()}`;
    // One at a time: each is a process of its own, started through tsx.
    const noStory = await cli(['case', '--case', caseId, '--payment-intent', paymentIntent, '--approval', approval]);
    expect(noStory.code, noStory.stderr).toBe(2);
    expect(noStory.stderr.trim()).toBe('interlock case needs --story.');
    const unknownApproval = await cli(['case', '--case', caseId, '--payment-intent', paymentIntent, '--story', story, '--approval', `ap_${uid()}`]);
    expect(unknownApproval.code, unknownApproval.stderr).toBe(2);
    expect(unknownApproval.stderr).toContain('nothing was queued');
    const unknown = await cli(['case', 'show', `case-${uid()}`]);
    expect(unknown.code, unknown.stderr).toBe(1);
    expect(unknown.stderr).toContain('No case');
    // Not a case id at all: bad input (exit 2, as every command's), said in one line.
    const notAnId = await cli(['case', 'show', 'bad id']);
    expect(notAnId.code, notAnId.stderr).toBe(2);
    expect(notAnId.stderr.trim()).toBe('"bad id" is not a case id (1-200 letters, digits or _ . : # -).');
    expect(await rig.stores.cases.get(caseId)).toBeNull();
  });

  // Rule: a new case under an approval that ended (revoked) is refused as the support API refuses it
  // (approval_not_live): exit 2, nothing stored or queued, the case id still free, the line saying who revoked it.
  it('a new case under a revoked approval exits 2, stores nothing, and names who revoked it', { timeout: 120_000 }, async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    await rig.stores.approvals.revoke(approval, 'lead@support');
    const caseId = `case-${uid()}`;
    const run = await cli(['case', '--case', caseId, '--payment-intent', paymentIntent, '--story', story, '--approval', approval]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`Approval ${approval} was revoked by lead@support`);
    expect(run.stderr).toContain(`case id ${caseId} is still free`);
    expect(await rig.stores.cases.get(caseId)).toBeNull();
  });
});
