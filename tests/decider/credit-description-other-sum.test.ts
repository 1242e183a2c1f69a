// Rule (DESIGN §3 I4, "never an effect the model did not ask for"): the line the customer reads in their balance
// history, a model credit's description, names no other sum of money than the credit moves. A well-formed
// issue_credit whose description names a money figure other than its amount_cents (in the case's currency, written
// as people write it: "$10", "$10.00", "10 USD", "USD 10.00", "€10", "10,00 €", "1000 cents"), or a sum in another
// currency, is MODEL_DEVIATED, with a problem naming both sums, so a person looks before Stripe keeps the line on the
// credit; figures that are no money (incident numbers, dates, durations, percentages) leave it as called. A refund's
// reason reaches neither Stripe (its reason is always requested_by_customer) nor the customer: it is not read so.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { MODEL_DEVIATED, type Decision, type DecisionCase } from '../../src/decider/decider.js';
import { bearer, TOKENS } from '../http/rig.js';
import { casesSuite, modelDecider } from '../support/cases-rig.js';
import { creditCase, refundCase } from './cases.js';
import { configFor, decidedAfterLookup, judged } from './decider-support.js';
import { replies } from './messages-server.js';

const { rig, server } = casesSuite();
const config = configFor(() => server);
const uid = () => randomBytes(5).toString('hex');

/** The decision the Anthropic decider makes on `input` when the model looks the facts up, then makes `call` (with `text`). */
const decided = (input: DecisionCase, call: Record<string, unknown>, text?: string): Promise<Decision> => decidedAfterLookup(server, config, input, call, text);

/** A credit case in `currency` (its get_account premise), approved up to $2,000 or its like. */
function creditIn(currency: string): DecisionCase {
  const base = creditCase();
  return creditCase({ approval: { ...base.approval, capCents: 200_000 }, facts: { get_account: { ...base.facts.get_account, currency } } });
}

const DEVIATED = MODEL_DEVIATED;
const ACCEPTED = 'accepted';

// [currency, amount_cents, description, verdict]
const TABLE: [string, number, string, string][] = [
  // The amount as called, however it is written.
  ['usd', 1_000, 'Outage credit of $10 for incident INC-0efaf1', ACCEPTED],
  ['usd', 1_000, 'Outage credit of $10.00 for incident INC-0efaf1', ACCEPTED],
  ['usd', 1_000, 'Outage credit of 10 USD for incident INC-0efaf1', ACCEPTED],
  ['usd', 1_000, 'Outage credit of USD 10.00 for incident INC-0efaf1', ACCEPTED],
  ['usd', 1_000, 'Outage credit of 10 dollars for incident INC-0efaf1', ACCEPTED],
  ['usd', 1_000, 'Outage credit (1000 cents) for incident INC-0efaf1', ACCEPTED],
  ['usd', 1_000, 'Outage credit of 10.00 for incident INC-0efaf1', ACCEPTED],
  ['usd', 150_000, 'Outage credit of $1,500.00 for incident INC-0efaf1', ACCEPTED],
  ['eur', 1_000, 'Gutschrift 10,00 € für Störung INC-0efaf1', ACCEPTED],
  ['eur', 1_000, 'Outage credit of €10 for incident INC-0efaf1', ACCEPTED],
  ['eur', 1_050, 'Outage credit of €10.50 for incident INC-0efaf1', ACCEPTED],
  ['cad', 1_000, 'Outage credit of $10 for incident INC-0efaf1', ACCEPTED],
  ['jpy', 1_500, 'Outage credit of ¥1,500 for incident INC-0efaf1', ACCEPTED],
  // Figures that are no money.
  ['usd', 1_000, 'Outage credit for incident INC-4521 on 2024-05-01, 3 days down', ACCEPTED],
  ['usd', 1_000, 'Credit for the 14:30 outage (ticket 2500), 99.9% SLA missed, INC-2024-0042', ACCEPTED],
  ['usd', 1_000, 'Goodwill credit for the 3-day service outage during incident INC-0efaf1 (case-34ef553a02)', ACCEPTED],
  // Another sum of the case's currency.
  ['usd', 1_000, 'Outage credit of $25.00 for incident INC-0efaf1', DEVIATED],
  ['usd', 1_000, 'Outage credit of $25 for incident INC-0efaf1', DEVIATED],
  ['usd', 1_000, 'Outage credit of 25 USD for incident INC-0efaf1', DEVIATED],
  ['usd', 1_000, 'Outage credit of USD 25.00 for incident INC-0efaf1', DEVIATED],
  ['usd', 1_000, 'Outage credit of 2500 cents for incident INC-0efaf1', DEVIATED],
  ['usd', 1_000, 'Outage credit of 25.00 for incident INC-0efaf1', DEVIATED],
  ['usd', 1_000, 'Outage credit of $10 (first of 3 credits, $30 in all) for INC-0efaf1', DEVIATED],
  ['usd', 1_000, 'Outage credit of $10.50 for incident INC-0efaf1', DEVIATED],
  ['usd', 1_000, 'Outage credit for incident INC-0efaf1; $5k more to follow', DEVIATED],
  ['eur', 1_000, 'Gutschrift 25,00 € für Störung INC-0efaf1', DEVIATED],
  ['jpy', 1_500, 'Outage credit of ¥15 for incident INC-0efaf1', DEVIATED],
  // The amount's figure, but in another currency.
  ['usd', 1_000, 'Outage credit of €10 for incident INC-0efaf1', DEVIATED],
  ['usd', 1_000, 'Outage credit of 10 EUR for incident INC-0efaf1', DEVIATED],
  ['eur', 1_000, 'Outage credit of $10 for incident INC-0efaf1', DEVIATED],
  ['eur', 1_000, 'Outage credit of 10 pounds for incident INC-0efaf1', DEVIATED],
];

describe('a model credit whose description names a money figure', () => {
  it.each(TABLE)('%s %i cents, "%s": %s', async (currency, amount, description, verdict) => {
    const input = creditIn(currency);
    const decision = await decided(input, { amount_cents: amount, description });
    expect(decision).toMatchObject({ action: 'credit', amountCents: amount, description });
    expect(judged(decision, input).verdict).toBe(verdict);
  });

  it('the problem names both sums: the one the line names and the one the credit moves, and that confirming sends the line as written', async () => {
    const input = creditIn('usd');
    const decision = await decided(input, { amount_cents: 1_000, description: 'Outage credit of $25.00 for incident INC-0efaf1' });
    const { problems } = judged(decision, input);
    expect(problems).toContain("the model's issue_credit call credits 1000 cents ($10.00), but its description, the line the customer reads in their balance history, names another sum: $25.00 (");
    expect(problems).toContain('credit of $25.00 for incident');
    expect(problems).toContain('confirming this credit sends that line as written beside a credit of $10.00');
    const euros = await decided(input, { amount_cents: 1_000, description: 'Outage credit of €10 for incident INC-0efaf1' });
    expect(judged(euros, input).problems).toContain("names another sum: a sum in another currency (€) than the credit's USD");
  });

  it('a units confusion ("$10" on 10 cents) is named once, as the units problem, not again as another sum', async () => {
    const input = creditIn('usd');
    const decision = await decided(input, { amount_cents: 10, description: 'A $10 credit for the outage during INC-0efaf1.' });
    const { verdict, problems } = judged(decision, input);
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain('names 10 in whole units');
    expect(problems).not.toContain('names another sum');
  });

  it("a refund's reason, which reaches neither Stripe nor the customer, may name other sums (the payment's, the approval's)", async () => {
    const input = refundCase();
    const decision = await decided(input, { amount_cents: 2_000, reason: 'Refund $20 of the $100.00 order for the cracked jar, as approved.' });
    expect(judged(decision, input).verdict).toBe(ACCEPTED);
  });
});

describe('through the decisions worker and the API', () => {
  let customer: string;
  beforeAll(async () => {
    customer = (await rig.stripe.customers.create({ name: 'Subscriber' })).id;
  });

  it('a $10.00 credit whose line says $25.00 is deviated for a person, and Stripe keeps no balance transaction', async () => {
    rig.useDecider(modelDecider(server));
    const approval = `ap_${uid()}`;
    await rig.stores.approvals.grant({ id: approval, approver: 'support-lead', capCents: 1_000, scope: `customer:${customer}`, expiresAt: Date.now() + 3_600_000, maxUses: 1 });
    const incident = `INC-${uid()}`;
    server.script(replies.toolUse('get_account', {}), replies.toolUse('issue_credit', { amount_cents: 1_000, description: `Outage credit of $25.00 for incident ${incident}` }));
    const answer = await request(rig.app).post('/v1/cases?wait=20').set(bearer(TOKENS.support)).send({ case_id: `case-${uid()}`, customer, incident, story: 'Lost access for three days; support approved one $10 credit.', approval });
    server.reset();
    expect(answer.body.state).toBe('deviated');
    expect((await rig.stripe.customers.listBalanceTransactions(customer)).data).toEqual([]);
    const item = await request(rig.app).get(`/v1/inbox/model_deviated:${String(answer.body.effect.effect_id)}`).set(bearer(TOKENS.approver));
    expect(item.body.happened).toContain('names another sum: $25.00');
    expect((await rig.stores.approvals.describe(approval)).snapshot).toMatchObject({ uses: 0, reservedCents: 0 });
  });
});
