// Rule: a decider is told what is left of the approval's cap (the cap less what effects under it hold or sent), not the
// whole cap: on an approval partly used, the model's decision tool allows at most what is left and its prompt says so
// (the cap is still shown), and the rules decider asks at most what is left, so its decision is sent instead of being
// refused over the cap. What is left counts what the gate counts at dispatch: the cap set on the scope (a subject cap,
// shared by every approval on it) when it leaves less, and nothing once every use of the approval is spent. A case with
// nothing left is declined without asking the model, saying what holds it; a model that asks for more than it was told
// is left (within the cap) is MODEL_DEVIATED, not proposed for the gate to refuse.
import { describe, expect, it } from 'vitest';
import { checkDecision, createDecider, decideByRules } from '../../src/decider/decider.js';
import type { CaseSubmission } from '../../src/interlock.js';
import { replies, type Received } from './messages-server.js';
import { casesSuite, modelDecider } from '../support/cases-rig.js';
import { uid } from '../http/rig.js';
import { creditCase } from './cases.js';
import { configFor } from './decider-support.js';

const { rig, server } = casesSuite();

/** A customer with a credit approval of `capCents` for up to `maxUses` credits. */
async function customerWithApproval(capCents: number, maxUses = 3): Promise<{ customer: string; approval: string }> {
  const customer = await rig.stripe.customers.create({ name: 'Subscriber' });
  const approval = `ap_${uid()}`;
  await rig.stores.approvals.grant({ id: approval, approver: 'support-lead', capCents, scope: `customer:${customer.id}`, expiresAt: Date.now() + 3_600_000, maxUses });
  return { customer: customer.id, approval };
}

function creditSubmission(customer: string, approval: string, incident: string): CaseSubmission {
  return { caseId: `case-${uid()}`, kind: 'credit', subject: customer, incident, story: `Service down during ${incident}; support approved a goodwill credit.`, approval, agent: 'support-bot' };
}

/** Submits the case, waits for its decision and, when it proposed, for the effect's outcome. */
async function decideAndSend(submission: CaseSubmission): Promise<{ state: string; amountCents: number | null; outcome: string | null }> {
  const { record, outcome } = await decided(submission);
  return { state: record.status.state, amountCents: record.status.decision?.amountCents ?? null, outcome };
}

/** Submits the case, waits for its decision and, when it proposed, for the effect's outcome; the case as it ends. */
async function decided(submission: CaseSubmission) {
  expect((await rig.decisions.submit(submission, 'sam')).status).toBe('created');
  const record = await rig.decisions.waitFor(submission.caseId, 15_000);
  if (record === null) throw new Error('the case is not stored');
  const effectId = record.status.effectId;
  const outcome = record.status.state === 'proposed' && effectId !== null ? ((await rig.effects.waitFor(effectId, 15_000))?.outcome ?? null) : null;
  return { record, outcome };
}

/** Uses 1000 of the approval's cap: a credit of $10.00 the model decides for another incident, sent. */
async function useTenDollars(customer: string, approval: string): Promise<void> {
  rig.useDecider(modelDecider(server));
  server.script(replies.toolUse('get_account', {}), replies.toolUse('issue_credit', { amount_cents: 1_000, description: 'Goodwill credit for INC-first.' }));
  expect(await decideAndSend(creditSubmission(customer, approval, 'INC-first'))).toEqual({ state: 'proposed', amountCents: 1_000, outcome: 'COMMITTED' });
  expect((await rig.stores.approvals.describe(approval)).snapshot).toMatchObject({ capCents: 3_000, reservedCents: 1_000 });
}

function amountSchemaOf(request: Received | undefined): unknown {
  const tool = request?.body.tools?.find((candidate) => candidate.name === 'issue_credit');
  return (tool?.input_schema as { properties?: { amount_cents?: unknown } } | undefined)?.properties?.amount_cents;
}

describe('a case on an approval partly used', () => {
  it('the model is told the 2000 left of the 3000 cap, asks for it, and the credit is sent', async () => {
    const { customer, approval } = await customerWithApproval(3_000);
    await useTenDollars(customer, approval);
    const before = server.received.length;
    server.script(replies.toolUse('get_account', {}), replies.toolUse('issue_credit', { amount_cents: 2_000, description: 'Goodwill credit for INC-second.' }));
    expect(await decideAndSend(creditSubmission(customer, approval, 'INC-second'))).toEqual({ state: 'proposed', amountCents: 2_000, outcome: 'COMMITTED' });

    const asked = server.received[before];
    // The decision tool takes no more than what is left, and says so beside the cap.
    expect(amountSchemaOf(asked)).toMatchObject({ minimum: 1, maximum: 2_000, description: expect.stringContaining('at most the 2000 left of the approved 3000') });
    const prompt = JSON.stringify(asked?.body.messages[0]?.content);
    expect(prompt).toMatch(/a cap of (\$30\.00 \()?3000\b/);
    expect(prompt).toMatch(/of which (\$10\.00 \()?1000\b[^.]* is held or sent already/);
    expect(prompt).toMatch(/at most the (\$20\.00 \()?2000\b[^.]* left/);
    expect(prompt).not.toMatch(/one account credit of at most/);
  });

  it('the rules decider asks for the 2000 left, not the 3000 cap, and the credit is sent', async () => {
    const { customer, approval } = await customerWithApproval(3_000);
    await useTenDollars(customer, approval);
    rig.useDecider(createDecider({ apiKey: null, model: 'unused', baseURL: null, maxTokens: 1024, timeoutMs: 1_000, maxRetries: 0, maxTurns: 4 }));
    expect(await decideAndSend(creditSubmission(customer, approval, 'INC-second'))).toEqual({ state: 'proposed', amountCents: 2_000, outcome: 'COMMITTED' });
    expect((await rig.stores.approvals.describe(approval)).snapshot).toMatchObject({ reservedCents: 3_000 });
  });
});

describe('an approval with nothing left', () => {
  const spent = creditCase({ approval: { ...creditCase().approval, centsLeft: 0 } });

  it('the rules decider declines it, naming the approval and what to do', () => {
    const decision = decideByRules(spent);
    expect(decision.action).toBe('decline');
    expect(decision.action === 'decline' ? decision.reason : '').toContain(`Approval ${spent.approval.id} has nothing left`);
  });

  it('the Anthropic decider declines it without asking the model', async () => {
    const before = server.received.length;
    const decision = await createDecider(configFor(() => server)()).decide(spent);
    expect(decision).toMatchObject({ action: 'decline', model: 'rules' });
    expect(server.received).toHaveLength(before);
  });
});

describe('a case whose scope has a cap leaving less than the approval', () => {
  it('the model is told the 500 the subject cap leaves, and the rules decider asks for it: sent, not refused over the cap', async () => {
    const { customer, approval } = await customerWithApproval(3_000);
    await rig.stores.approvals.setSubjectCap(`customer:${customer}`, 500);
    const before = server.received.length;
    rig.useDecider(modelDecider(server));
    server.script(replies.toolUse('get_account', {}), replies.toolUse('issue_credit', { amount_cents: 500, description: 'Goodwill credit for INC-capped.' }));
    expect(await decideAndSend(creditSubmission(customer, approval, 'INC-capped'))).toEqual({ state: 'proposed', amountCents: 500, outcome: 'COMMITTED' });
    expect(amountSchemaOf(server.received[before])).toMatchObject({ maximum: 500 });
    expect(JSON.stringify(server.received[before]?.body.messages[0]?.content)).toMatch(new RegExp(`the cap set on customer:${customer}, shared by every approval on it, has only (\\$5\\.00 \\()?500\\b`));

    const other = await customerWithApproval(3_000);
    await rig.stores.approvals.setSubjectCap(`customer:${other.customer}`, 500);
    rig.useDecider(createDecider({ apiKey: null, model: 'unused', baseURL: null, maxTokens: 1024, timeoutMs: 1_000, maxRetries: 0, maxTurns: 4 }));
    const { record } = await decided(creditSubmission(other.customer, other.approval, 'INC-capped'));
    expect(record.status).toMatchObject({ state: 'proposed', decision: { amountCents: 500 } });
    // Said as what holds it: the cap set on the customer, not the approval (nothing of which was used).
    expect(record.status.decision?.text).toContain(`what the cap set on customer:${other.customer} lets move`);
    expect(record.status.decision?.text).not.toContain('what is left of');
  });

  it('a subject cap with nothing left declines the case, saying to raise that cap; no model is asked', async () => {
    const { customer, approval } = await customerWithApproval(3_000);
    await rig.stores.approvals.setSubjectCap(`customer:${customer}`, 0);
    rig.useDecider(modelDecider(server));
    const before = server.received.length;
    const { record } = await decided(creditSubmission(customer, approval, 'INC-closed'));
    expect(record.status).toMatchObject({ state: 'declined', decision: { model: 'rules', action: 'decline' } });
    expect(record.status.decision?.text).toContain(`The cap set on customer:${customer} lets nothing more move`);
    expect(record.status.decision?.text).toContain(`interlock caps set customer:${customer}`);
    expect(server.received).toHaveLength(before);
  });
});

describe('a case on an approval whose every use is spent', () => {
  it('is declined, saying the approval has no use left; no model is asked', async () => {
    const { customer, approval } = await customerWithApproval(3_000, 1);
    await useTenDollars(customer, approval);
    const before = server.received.length;
    const { record } = await decided(creditSubmission(customer, approval, 'INC-second'));
    expect(record.status).toMatchObject({ state: 'declined', decision: { model: 'rules', action: 'decline' } });
    expect(record.status.decision?.text).toContain(`Approval ${approval} has no use left`);
    expect(server.received).toHaveLength(before);
  });
});

describe('a model asking for more than it was told is left', () => {
  it('2500 when told 2000 of the 3000 cap are left: MODEL_DEVIATED naming what it was told, nothing proposed', async () => {
    const { customer, approval } = await customerWithApproval(3_000);
    await useTenDollars(customer, approval);
    server.script(replies.toolUse('get_account', {}), replies.toolUse('issue_credit', { amount_cents: 2_500, description: 'Goodwill credit for INC-second.' }));
    const { record } = await decided(creditSubmission(customer, approval, 'INC-second'));
    expect(record.status.state).toBe('deviated');
    expect(record.status.problems).toContainEqual(expect.stringContaining(`it was told only $20.00 of approval ${approval}'s $30.00 were left`));
    expect((await rig.stores.approvals.describe(approval)).snapshot).toMatchObject({ reservedCents: 1_000 });
  });
});

describe('an ask checked against an approval with no use left', () => {
  it('names the spent uses, not a number of cents left', () => {
    const spent = creditCase({ approval: { ...creditCase().approval, centsLeft: 0, leftBy: 'uses' } });
    const check = checkDecision({ action: 'credit', amountCents: 100, description: 'Goodwill credit.', model: 'custom', text: 'custom' }, spent.approval, 'credit', null);
    expect(check).toMatchObject({ verdict: 'MODEL_DEVIATED', problems: [expect.stringContaining(`approval ${spent.approval.id} has no use left`)] });
  });
});
