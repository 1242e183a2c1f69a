// Rule (DESIGN §3 I4, "never an effect the model did not ask for"): a well-formed issue_refund/issue_credit whose own
// words name its amount in whole units, a money figure equal to amount_cents read as units anywhere in its reason,
// description or the prose beside it ("refund of $20.00", "Refund amount: $20.00", "refund the customer $20.00",
// "Refunding 20.00 USD", "a $10 credit"), is not sent as called: it is MODEL_DEVIATED, recorded with the amount AS
// CALLED (20, never the 2000 its words name), the hundredfold reading only in the problem, so confirming a false flag (a
// price beside it: "1% of the $25.00 jar" beside 25) never moves more than the model called for; the approval is not
// used. Words that also name the amount as called ("$0.20", "20 cents", "a 50-cent fee", "$20" beside 2000), name no
// money figure (an order number, "2 items", "refund 20"), or a case in a currency without cents (jpy) leave the
// decision as called.
import { describe, expect, it } from 'vitest';
import { inboxItemId } from '../../src/core/inbox.js';
import { MODEL_DEVIATED } from '../../src/decider/check.js';
import type { Decision, DecisionCase } from '../../src/decider/decider.js';
import { casesSuite, modelDecider } from '../support/cases-rig.js';
import { uid } from '../http/rig.js';
import { creditCase, PAYMENT, refundCase } from './cases.js';
import { configFor, decidedAfterLookup, judged } from './decider-support.js';
import { replies } from './messages-server.js';

const { rig, server } = casesSuite();
const config = configFor(() => server);

/** The decision the Anthropic decider makes on `input` when the model looks the facts up, then makes `call` (with `text`). */
const decided = (input: DecisionCase, call: Record<string, unknown>, text?: string): Promise<Decision> => decidedAfterLookup(server, config, input, call, text);

describe('a money call whose own words name its amount in whole units is a deviation, not sent as called', () => {
  it('issue_refund 20 cents, its reason "refund of $20.00" and prose "$20" on a $20 approval: MODEL_DEVIATED, recorded with the 20 it called, the 2000 only in the problem', async () => {
    const input = refundCase();
    const decision = await decided(input, { amount_cents: 20, reason: 'Goodwill refund of $20.00 for the cracked jar, the full approved amount.' }, 'The approved amount is $20, so I refund 20.');
    expect(decision).toMatchObject({ action: 'refund', amountCents: 20 });
    expect((decision as { text: string }).text).toContain('issue_refund 20 cents');
    const { verdict, problems } = judged(decision, input);
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain("the model's issue_refund call asked for 20 cents, but its reason names 20 in whole units, 2000 cents ($20.00)");
    expect(problems).toContain('$20.00 for the cracked');
    expect(problems).toContain('the 20 cents it called for ($0.20) is recorded, and confirming this refund sends no more; if its words name what was meant ($20.00), dismiss this and decide the case again');
  });

  it('the only figure in the reason, in whole units, is read as the money moved: "Cracked jar, goodwill: $20.00." beside 20 is a deviation, recorded as 20', async () => {
    const input = refundCase();
    const decision = await decided(input, { amount_cents: 20, reason: 'Cracked jar, goodwill: $20.00.' });
    expect(decision).toMatchObject({ amountCents: 20 });
    expect(judged(decision, input)).toMatchObject({ verdict: MODEL_DEVIATED, problems: expect.stringContaining('asked for 20 cents, but its reason names 20 in whole units') });
  });

  it('the figure only in the prose beside the call ("20.00 USD"), or only in a credit\'s description ("$10"): a deviation too', async () => {
    const refund = refundCase();
    const byProse = await decided(refund, { amount_cents: 20, reason: 'Goodwill refund for the cracked jar, as approved.' }, 'Refunding 20.00 USD as support approved.');
    expect(byProse).toMatchObject({ amountCents: 20 });
    expect(judged(byProse, refund).problems).toContain('but what it wrote beside the call names 20 in whole units, 2000 cents ($20.00)');
    const credit = creditCase();
    const described = await decided(credit, { amount_cents: 10, description: 'A $10 credit for the outage during INC-0efaf1.' });
    expect(described).toMatchObject({ action: 'credit', amountCents: 10 });
    expect(judged(described, credit)).toMatchObject({ verdict: MODEL_DEVIATED, problems: expect.stringContaining("the model's issue_credit call asked for 10 cents, but its description names 10 in whole units, 1000 cents ($10.00)") });
  });

  it('through the decisions worker: nothing is refunded, the approval is not used, and the inbox item holds the 20 called, never the 2000 its words name', async () => {
    rig.useDecider(modelDecider(server));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const caseId = `units-${uid()}`;
    server.script(
      replies.toolUse('get_payment', {}),
      replies.toolUse('issue_refund', { amount_cents: 20, reason: 'Goodwill refund of $20.00 for the cracked jar, the full approved amount.' }, { text: 'The approved amount is $20, so I refund 20.' }),
    );
    await rig.decisions.submit({ caseId, kind: 'refund', subject: paymentIntent, incident: null, story: 'The jar arrived cracked; support approved a $20 goodwill refund.', approval, agent: 'support-bot' }, 'sam');
    const record = await rig.decisions.waitFor(caseId, 15_000);
    expect(record?.status).toMatchObject({ state: 'deviated', decision: { amountCents: 20 } });
    expect(await rig.refundsAt(paymentIntent)).toEqual([]);
    expect((await rig.stores.approvals.describe(approval)).snapshot).toMatchObject({ uses: 0, reservedCents: 0 });
    const item = await rig.stores.inbox.get(inboxItemId('model_deviated', record?.status.effectId ?? ''));
    expect(item).toMatchObject({ kind: 'model_deviated', status: 'open', centsAtStake: 20, happened: expect.stringContaining('asked for 20 cents') });
  });
});

describe('words that name the amount as called, or no money figure, leave the decision as called', () => {
  it('"$0.20", "20 cents" beside 20, and "$20.00" beside 2000: accepted as called', async () => {
    const input = refundCase();
    for (const [amount, reason] of [
      [20, 'A token refund of $0.20 for the late reply.'],
      [20, 'A token refund of 20 cents for the late reply.'],
      [2_000, 'Goodwill refund of $20.00 for the cracked jar.'],
      [2_000, 'Refund $20 of the $2,000 order for the cracked jar.'],
    ] as const) {
      const decision = await decided(input, { amount_cents: amount, reason }, `The approved amount is ${amount === 20 ? '$0.20' : '$20.00'}.`);
      expect(decision).toMatchObject({ amountCents: amount });
      expect(decision).not.toHaveProperty('deviations');
      expect(judged(decision, input).verdict).toBe('accepted');
    }
  });

  it('figures that are no money (an order number, "2 items", "refund 20"), or no figure: accepted as called', async () => {
    const input = refundCase();
    for (const [amount, reason, text] of [
      [20, 'Refund for order 20, as approved.', 'I refund 20.'],
      [2, 'Refund for the 2 items that arrived cracked.', undefined],
      [20, 'Goodwill refund for the cracked jar.', undefined],
    ] as const) {
      const decision = await decided(input, { amount_cents: amount, reason }, text);
      expect(decision).toMatchObject({ amountCents: amount });
      expect(judged(decision, input).verdict).toBe('accepted');
    }
  });

  it('"N-cent" or "N-cents" naming the amount as called, beside a figure 100x it: accepted as called', async () => {
    const input = refundCase();
    for (const [amount, reason, text] of [
      [50, 'Refund the 50-cent card surcharge that was added to the $50.00 order by mistake.', undefined],
      [50, 'A 50-cents refund for the late reply.', 'The $50.00 order arrived late.'],
      [50, 'A 50-cent refund for the surcharge; the customer first asked for a $50.00 refund.', undefined],
    ] as const) {
      const decision = await decided(input, { amount_cents: amount, reason }, text);
      expect({ reason, amountCents: (decision as { amountCents: number }).amountCents, deviations: (decision as { deviations?: string[] }).deviations ?? null }).toEqual({ reason, amountCents: amount, deviations: null });
      expect(judged(decision, input).verdict).toBe('accepted');
    }
  });

  it('a jpy payment, where whole yen are the smallest unit: "¥2000" beside 2000, and "¥20" beside 20, are as called', async () => {
    const yen = refundCase({ facts: { get_payment: { payment_intent: PAYMENT, amount_cents: 10_000, chargebacks: [], refunded_by_others: 0, currency: 'jpy' } } });
    for (const [amount, reason] of [
      [2_000, 'Goodwill refund of ¥2000 for the cracked jar.'],
      [20, 'A token refund of 20 JPY for the late reply.'],
    ] as const) {
      const decision = await decided(yen, { amount_cents: amount, reason });
      expect(decision).toMatchObject({ amountCents: amount });
      expect(judged(decision, yen).verdict).toBe('accepted');
    }
  });
});

describe('a figure 100x the amount however it is phrased: flagged for a person, recorded as called', () => {
  it('the refund written as "Refund amount: $20.00", "refund the customer $20.00", "the full $20.00", or beside an order number, and a price beside it ("1% of the $25.00 jar"): MODEL_DEVIATED, never recorded at 100x', async () => {
    const input = refundCase();
    for (const [amount, reason, text] of [
      [20, 'Refund amount: $20.00 for order #1234 (cracked jar).', undefined],
      [20, 'Goodwill refund for order 1234.', 'Refund amount: $20.00, the approved goodwill amount for order 1234.'],
      [20, 'Goodwill refund for order 1234.', 'I will refund the customer $20.00 for order 1234.'],
      [20, 'Refund the full $20.00 for the cracked jar in order #1234.', undefined],
      [20, 'Refunding the $20.00 paid for order #1234.', undefined],
      [25, 'Price-match refund: 1% of the $25.00 jar.', undefined],
      [50, 'Refund the surcharge added to the $50.00 order by mistake, as approved (50 of it).', undefined],
    ] as const) {
      const decision = await decided(input, { amount_cents: amount, reason }, text);
      expect({ reason, amountCents: (decision as { amountCents: number }).amountCents }).toEqual({ reason, amountCents: amount });
      expect(judged(decision, input).verdict, reason).toBe(MODEL_DEVIATED);
    }
  });
});
