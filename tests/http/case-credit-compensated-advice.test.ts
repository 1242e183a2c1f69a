// Rule: every refusal says what to do, and what it says can be done. A credit case on an incident billing compensated
// in part ($5 SLA credit tagged metadata.incident, $10 approved) cannot send the rest through Interlock: the credit
// target credits an incident once and refuses any credit for one others compensated (incident_already_compensated).
// So the rules decider's decline, the model_deviated problem and the stale-premise case's sentence say the remainder
// goes by hand in the Stripe Dashboard (not "send it with POST /v1/credits", not "re-approve it"), and a re-approval of
// such a credit from the inbox is refused up front (409 action_not_allowed, naming the compensation), the item left
// open, instead of closing the item and ending on REFUSED:target_error with nothing said. Before, each of the three
// offered a remedy certain to be refused (found by review: compensated-incident-dead-advice).
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { casesSuite, modelDecider } from '../support/cases-rig.js';
import { bearer, TOKENS } from './rig.js';
import { replies } from '../decider/messages-server.js';

const { rig, server } = casesSuite();
const uid = () => randomBytes(5).toString('hex');

async function grant(customer: string, capCents = 1_000) {
  const approval = `ap_${uid()}`;
  await rig.stores.approvals.grant({ id: approval, approver: 'support-lead', capCents, scope: `customer:${customer}`, expiresAt: Date.now() + 3_600_000, maxUses: 3 });
  return approval;
}
async function customerWithApproval() {
  const customer = (await rig.stripe.customers.create({ name: 'Subscriber' })).id;
  return { customer, approval: await grant(customer) };
}
/** Billing's SLA automation credits $5 for the incident, tagged as it tags its credits. */
const billingCompensates = (customer: string, incident: string) => rig.stripe.customers.createBalanceTransaction(customer, { amount: -500, currency: 'usd', metadata: { incident } });
const story = 'Three days without access during the outage; billing credited $5 automatically, support approved up to $10 in all.';
const byHand = 'credits the remainder by hand in the Stripe Dashboard';

/** Re-approves an item under a fresh approval: the answer, and whether the item is still open after it. */
async function reapprove(itemId: string, customer: string) {
  const approval = await grant(customer);
  const answer = await request(rig.app).post(`/v1/inbox/${itemId}/reapprove`).set(bearer(TOKENS.approver)).send({ approval, note: 'customer still owed the other $5' });
  const item = await rig.stores.inbox.get(itemId);
  return { answer, open: item?.status === 'open' };
}

/** The customer's balance transactions' amounts: billing's $5 only, when Interlock sent nothing. */
const balance = async (customer: string) => (await rig.stripe.customers.listBalanceTransactions(customer)).data.map((t) => t.amount);

describe('a credit case on an incident billing compensated in part', () => {
  it('the rules decline says the remainder goes by hand in the Dashboard, not through POST /v1/credits', async () => {
    const { customer, approval } = await customerWithApproval();
    const incident = `INC-${uid()}`;
    await billingCompensates(customer, incident);
    const answer = await request(rig.app).post('/v1/cases?wait=20').set(bearer(TOKENS.support)).send({ case_id: `case-${uid()}`, customer, incident, story, approval });
    expect(answer.body.state).toBe('declined');
    expect(answer.body.sentence).toContain(`was given $5.00 for incident ${incident} already`);
    expect(answer.body.sentence).toContain(`Interlock credits an incident once, so a credit for incident ${incident} is refused before the send (incident_already_compensated)`);
    expect(answer.body.sentence).toContain(byHand);
    expect(answer.body.sentence).not.toContain('a person sends it with POST /v1/credits');
    // What the old advice led to: the credit through Interlock is refused, as the decline now says.
    const viaApi = await request(rig.app).post('/v1/credits?wait=15').set(bearer(TOKENS.support)).send({ request_id: `hand-${uid()}`, customer, amount: 500, incident, approval });
    expect(viaApi.body.outcome).toBe('REFUSED:target_error');
    expect(await balance(customer)).toEqual([-500]);
  });

  it("model_deviated: the problem says the Dashboard, and the item's re-approval is refused up front, the item left open", async () => {
    rig.useDecider(modelDecider(server));
    const { customer, approval } = await customerWithApproval();
    const incident = `INC-${uid()}`;
    await billingCompensates(customer, incident);
    server.script(replies.toolUse('get_account', {}), replies.toolUse('issue_credit', { amount_cents: 500, description: 'Outage credit, the part billing did not cover' }));
    const answer = await request(rig.app).post('/v1/cases?wait=20').set(bearer(TOKENS.support)).send({ case_id: `case-${uid()}`, customer, incident, story, approval });
    expect(answer.body.state).toBe('deviated');
    const problems = (answer.body.problems as string[]).join(' ');
    expect(problems).toContain('Interlock credits an incident once');
    expect(problems).toContain(byHand);
    expect(problems).not.toContain('a person re-approves it only if the customer is still owed money');
    const itemId = `model_deviated:${String(answer.body.effect.effect_id)}`;
    const { answer: refused, open } = await reapprove(itemId, customer);
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error.code).toBe('action_not_allowed');
    expect(refused.body.error.message).toContain(`incident ${incident} of customer ${customer} was compensated $5.00 already by others`);
    expect(refused.body.error.message).toContain('credit the remainder by hand in the Stripe Dashboard');
    expect(open).toBe(true);
    expect(await balance(customer)).toEqual([-500]);
  });

  it('stale premise (compensated between decision and send): the case says so, and the re-approval is refused up front', async () => {
    const { customer, approval } = await customerWithApproval();
    const incident = `INC-${uid()}`;
    rig.wrapSink((sink) => ({
      propose: async (proposal, how) => {
        await billingCompensates(customer, incident);
        return sink.propose(proposal, how);
      },
    }));
    const caseId = `case-${uid()}`;
    const answer = await request(rig.app).post('/v1/cases?wait=20').set(bearer(TOKENS.support)).send({ case_id: caseId, customer, incident, story, approval });
    rig.wrapSink(null);
    expect(answer.body.outcome).toBe('REFUSED:stale_premise');
    const itemId = `stale_premise:${String(answer.body.effect.effect_id)}`;
    const shown = await request(rig.app).get(`/v1/cases/${caseId}`).set(bearer(TOKENS.auditor));
    expect(shown.body.sentence).toContain(`Inbox item ${itemId} is open on it: its incident was compensated since the decision, and Interlock credits an incident once, so a re-approval there is refused`);
    expect(shown.body.sentence).not.toContain('a person may re-approve it');
    const { answer: refused, open } = await reapprove(itemId, customer);
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error.code).toBe('action_not_allowed');
    expect(open).toBe(true);
    const after = await request(rig.app).get(`/v1/cases/${caseId}`).set(bearer(TOKENS.auditor));
    expect({ outcome: after.body.outcome, inbox: after.body.links.inbox }).toEqual({ outcome: 'REFUSED:stale_premise', inbox: `/v1/inbox/${itemId}` });
    expect(await balance(customer)).toEqual([-500]);
  });
});
