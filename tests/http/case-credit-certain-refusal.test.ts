// Rule: a credit case is not decided into a credit the target is certain to refuse before the send, spending the case
// id with nothing said of what to do; the facts the decider reads come from the target's own reads, and say so.
// - A customer billed in eur while credits are given in usd: the facts carry the customer's currency
//   (customer_currency), and the case is declined naming it and saying the credit goes by hand in eur in the Dashboard
//   (before, it was proposed as "Goodwill credit of $10.00" and refused currency_mismatch, REFUSED:target_error).
// - A customer deleted at Stripe: its facts read null, which is "could not be read", not "nothing compensated": the
//   case is declined naming the customer (before, it was proposed and refused on apply's 404).
// - A credit sent anyway on such a customer (POST /v1/credits) is refused by a read before the send, and its sentence
//   says the target refused it before sending, not "Stripe refused the request outright" (the 404 was of a GET).
// Found by review: credit-case-spent-on-known-refusal.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { casesSuite } from '../support/cases-rig.js';
import { bearer, TOKENS } from './rig.js';

const { rig } = casesSuite();
const uid = () => randomBytes(5).toString('hex');

async function customerWithApproval(capCents = 1_000) {
  const customer = (await rig.stripe.customers.create({ name: 'Kunde' })).id;
  const approval = `ap_${uid()}`;
  await rig.stores.approvals.grant({ id: approval, approver: 'support-lead', capCents, scope: `customer:${customer}`, expiresAt: Date.now() + 3_600_000, maxUses: 2 });
  return { customer, approval };
}
const story = 'Three days without access during the outage; support approved one $10 credit.';

describe('a credit case the target is certain to refuse', () => {
  it('a customer billed in eur is declined naming its currency, and what a person does', async () => {
    const { customer, approval } = await customerWithApproval();
    await rig.stripe.customers.createBalanceTransaction(customer, { amount: -200, currency: 'eur', description: 'opening credit' });
    const answer = await request(rig.app).post('/v1/cases?wait=20').set(bearer(TOKENS.support)).send({ case_id: `case-${uid()}`, customer, incident: `INC-${uid()}`, story, approval });
    expect({ state: answer.body.state, outcome: answer.body.outcome }).toEqual({ state: 'declined', outcome: 'DECLINED' });
    expect(answer.body.sentence).toContain(`Customer ${customer} is billed in eur (customer_currency in the facts read at Stripe), and credits are given in usd`);
    expect(answer.body.sentence).toContain('refused before the send (currency_mismatch)');
    expect(answer.body.sentence).toContain('a person credits it by hand in eur in the Stripe Dashboard');
    expect((await rig.stripe.customers.listBalanceTransactions(customer)).data.map((t) => t.amount)).toEqual([-200]);
  });

  it('a customer billed in usd is credited as before, its currency among the premises', async () => {
    const { customer, approval } = await customerWithApproval();
    await rig.stripe.customers.createBalanceTransaction(customer, { amount: -200, currency: 'usd', description: 'opening credit' });
    const answer = await request(rig.app).post('/v1/cases?wait=20').set(bearer(TOKENS.support)).send({ case_id: `case-${uid()}`, customer, incident: `INC-${uid()}`, story, approval });
    expect({ state: answer.body.state, outcome: answer.body.outcome }).toEqual({ state: 'proposed', outcome: 'COMMITTED' });
    const receipt = await rig.stores.journal.receipt(String(answer.body.effect.effect_id));
    const proposed = receipt?.entries.find((entry) => entry.kind === 'PROPOSED');
    expect(proposed).toMatchObject({ premises: { incident_compensation: 0, currency: 'usd', customer_currency: 'usd' } });
  });

  it('a customer with no currency yet takes the credit as its own: credited', async () => {
    const { customer, approval } = await customerWithApproval();
    const answer = await request(rig.app).post('/v1/cases?wait=20').set(bearer(TOKENS.support)).send({ case_id: `case-${uid()}`, customer, incident: `INC-${uid()}`, story, approval });
    expect({ state: answer.body.state, outcome: answer.body.outcome }).toEqual({ state: 'proposed', outcome: 'COMMITTED' });
  });

  it('a deleted customer is declined naming it; a credit sent on it anyway is said refused before sending', async () => {
    const { customer, approval } = await customerWithApproval();
    await rig.stripe.customers.del(customer);
    const incident = `INC-${uid()}`;
    const answer = await request(rig.app).post('/v1/cases?wait=20').set(bearer(TOKENS.support)).send({ case_id: `case-${uid()}`, customer, incident, story, approval });
    expect({ state: answer.body.state, outcome: answer.body.outcome }).toEqual({ state: 'declined', outcome: 'DECLINED' });
    expect(answer.body.sentence).toContain(`The facts of customer ${customer} could not be read at Stripe`);
    expect(answer.body.sentence).toContain('Stripe does not know the customer, or it was deleted');

    const sent = await request(rig.app).post('/v1/credits?wait=15').set(bearer(TOKENS.support)).send({ request_id: `hand-${uid()}`, customer, amount: 500, incident, approval });
    expect(sent.body.outcome).toBe('REFUSED:target_error');
    expect(sent.body.reason).toMatch(/^the target refused before sending: .*could not read customer .*Stripe refused GET \/v1\/customers\//);
    expect(sent.body.sentence).toBe("The target's own check refused it before sending, so the request never reached Stripe; the reason says why.");
  });
});
