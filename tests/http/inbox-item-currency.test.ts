// Rule: an inbox item names the money at stake in its currency wherever it is read. The item keeps it
// (InboxItem.currency: for a credit its `currency` premise, else INTERLOCK_CREDIT_CURRENCY), the page and `interlock
// inbox show` print it, and every answer of the support API that holds an item (GET /v1/inbox/:id, the listing, the
// re-approval's and the dismissal's answers) gives it as `currency` beside `cents_at_stake`, a lowercase ISO code or
// null, as the OpenAPI document says: the approver, who re-approves from the API, may not read the effect (its link is
// null for that role), so `cents_at_stake: 1500` alone would not say whether it is $15.00 or ¥1,500.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { casesSuite, modelDecider } from '../support/cases-rig.js';
import { bearer, TOKENS } from './rig.js';
import { replies } from '../decider/messages-server.js';

const { rig, server } = casesSuite();
const uid = () => randomBytes(5).toString('hex');

/** A credit case the model decides over its $10.00 approval ($15.00): MODEL_DEVIATED, its item open. */
async function deviatedCredit(): Promise<{ itemId: string; customer: string }> {
  rig.useDecider(modelDecider(server));
  const customer = (await rig.stripe.customers.create({ name: 'Subscriber' })).id;
  const approval = `ap_${uid()}`;
  await rig.stores.approvals.grant({ id: approval, approver: 'support-lead', capCents: 1_000, scope: `customer:${customer}`, expiresAt: Date.now() + 3_600_000, maxUses: 1 });
  server.script(replies.toolUse('get_account', {}), replies.toolUse('issue_credit', { amount_cents: 1_500, description: 'Outage credit for incident downtime' }));
  const answer = await request(rig.app).post('/v1/cases?wait=20').set(bearer(TOKENS.support)).send({ case_id: `case-${uid()}`, customer, incident: `INC-${uid()}`, story: 'Lost access for three days; support approved up to $10.', approval });
  server.reset();
  expect(answer.body.state).toBe('deviated');
  return { itemId: `model_deviated:${String(answer.body.effect.effect_id)}`, customer };
}

describe('a credit item over the API names the currency of cents_at_stake', () => {
  it('the item and the listing give currency beside cents_at_stake, though the approver cannot follow the effect', async () => {
    const { itemId } = await deviatedCredit();
    expect(await rig.stores.inbox.get(itemId)).toMatchObject({ centsAtStake: 1_500, currency: 'usd' });
    const item = await request(rig.app).get(`/v1/inbox/${itemId}`).set(bearer(TOKENS.approver));
    expect(item.status).toBe(200);
    expect(item.body).toMatchObject({ cents_at_stake: 1_500, currency: 'usd' });
    expect(item.body.links.effect).toBeNull();
    const effectId = itemId.slice('model_deviated:'.length);
    const listed = await request(rig.app).get(`/v1/inbox?effect=${effectId}`).set(bearer(TOKENS.approver));
    expect(listed.body.data).toMatchObject([{ id: itemId, cents_at_stake: 1_500, currency: 'usd' }]);
  });

  it("the re-approval's answer and the dismissal's answer give it too", async () => {
    const first = await deviatedCredit();
    const fresh = `ap_${uid()}`;
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: fresh, approver: 'lee', cap_cents: 1_500, scope: `customer:${first.customer}` })).status).toBe(201);
    const reapproved = await request(rig.app).post(`/v1/inbox/${first.itemId}/reapprove`).set(bearer(TOKENS.approver)).send({ approval: fresh, note: 'Three days down: $15 is right.' });
    expect(reapproved.status, JSON.stringify(reapproved.body)).toBe(202);
    expect(reapproved.body.item).toMatchObject({ status: 'closed', cents_at_stake: 1_500, currency: 'usd' });
    const second = await deviatedCredit();
    const dismissed = await request(rig.app).post(`/v1/inbox/${second.itemId}/dismiss`).set(bearer(TOKENS.approver)).send({ note: 'Support will decide this one by hand.' });
    expect(dismissed.status, JSON.stringify(dismissed.body)).toBe(200);
    expect(dismissed.body).toMatchObject({ status: 'closed', cents_at_stake: 1_500, currency: 'usd' });
  });

  it('the OpenAPI document lists currency on InboxItem, a string or null', async () => {
    const doc = (await request(rig.app).get('/v1/openapi.json')).body as { components: { schemas: Record<string, { properties: Record<string, unknown>; required?: string[] }> } };
    const item = doc.components.schemas['InboxItem'];
    expect(item?.properties['currency']).toMatchObject({ type: ['string', 'null'] });
    expect(item?.required).toContain('currency');
  });
});
