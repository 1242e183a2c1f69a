// Rule (DESIGN §3 I4, "never an effect the model did not ask for"): a model's money call is checked against its own
// words in the case's currency, read in that currency's own decimals (none for jpy, three for kwd), never as hundredths
// of every currency. A well-formed issue_refund whose reason or prose names a money sum and never the amount it calls
// for is MODEL_DEVIATED, nothing sent, with a problem naming the figure and the amount (`amount_cents: 500000` beside
// "refund of ¥5,000" would refund ¥500,000); sums the case states (the payment's amount, what other refunds returned,
// the cap) are mentions, not another refund, unless the amount is that sum counted in another unit; a figure naming
// the amount as called settles the words. A kwd figure whose only separator is a comma before three digits
// ("KWD 1,500") reads two ways and names another sum unless both are the call. In a malformed call, a figure written
// in the case's currency is weighed against the cap in that currency: "¥5000" under a ¥10,000 cap is within it.
import { describe, expect, it } from 'vitest';
import { checkDecision, createAnthropicDecider, DeciderError, MODEL_DEVIATED, type Decision, type DecisionCase } from '../../src/decider/decider.js';
import { casesSuite, modelDecider } from '../support/cases-rig.js';
import { uid } from '../http/rig.js';
import { creditCase, refundCase } from './cases.js';
import { configFor, decidedAfterLookup, judged } from './decider-support.js';
import { replies } from './messages-server.js';

const { rig, server } = casesSuite();
const config = configFor(() => server);

const decided = (input: DecisionCase, call: Record<string, unknown>, text?: string): Promise<Decision> => decidedAfterLookup(server, config, input, call, text);

/** A refund case in `currency` on a payment of `paid` (all of it refundable, `refundedByOthers` returned besides), approved up to `cap`. */
function refundIn(currency: string, paid: number, cap: number, refundedByOthers = 0): DecisionCase {
  const base = refundCase();
  return refundCase({
    approval: { ...base.approval, capCents: cap },
    facts: { get_payment: { ...base.facts.get_payment, amount_cents: paid + refundedByOthers, refundable: paid, refunded_by_others: refundedByOthers, currency } },
  });
}

/** A credit case in `currency`, approved up to `cap`. */
function creditIn(currency: string, cap: number): DecisionCase {
  const base = creditCase();
  return creditCase({ approval: { ...base.approval, capCents: cap }, facts: { get_account: { ...base.facts.get_account, currency } } });
}

const ACCEPTED = 'accepted';

describe('a refund whose words name a sum and never the amount called is a deviation, read in the currency\'s decimals', () => {
  it('jpy: amount_cents 500000 beside "refund of ¥5,000" (cents counted where yen has none) is MODEL_DEVIATED, recorded as called, the problem naming the figure and the amount', async () => {
    const input = refundIn('jpy', 1_000_000, 1_000_000);
    const decision = await decided(input, { amount_cents: 500_000, reason: 'Goodwill refund of ¥5,000 for the cracked jar.' });
    expect(decision).toMatchObject({ action: 'refund', amountCents: 500_000 });
    const { verdict, problems } = judged(decision, input);
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain("the model's issue_refund call asked for 500000 (500000 JPY), but its words never name that sum and name another: 5000 JPY in its reason");
    expect(problems).toContain('500000 is that sum counted in hundredths (cents), where JPY is counted in whole units');
  });

  it.each([
    [20, 'Goodwill refund of 20.000 KWD for the cracked jar.', 'counted in whole units, where KWD is counted in thousandths'],
    [2_000, 'Goodwill refund of KWD 20.00 for the cracked jar.', 'counted in hundredths (cents), where KWD is counted in thousandths'],
  ])('kwd: amount_cents %i beside "%s" is MODEL_DEVIATED', async (amount, reason, hint) => {
    const input = refundIn('kwd', 100_000, 100_000);
    const decision = await decided(input, { amount_cents: amount, reason });
    const { verdict, problems } = judged(decision, input);
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain('20.000 KWD in its reason');
    expect(problems).toContain(hint);
  });

  it('a sum the case states is no excuse when the amount is that sum counted in cents: "a second ¥5,000 refund" beside 500000, ¥5,000 refunded before', async () => {
    const input = refundIn('jpy', 1_000_000, 1_000_000, 5_000);
    const decision = await decided(input, { amount_cents: 500_000, reason: 'A second ¥5,000 refund, as the first one.' });
    // The decider's own deviation, beside the one checkDecision adds for the earlier refund.
    expect((decision as { deviations?: string[] }).deviations).toEqual([expect.stringContaining('5000 JPY in its reason')]);
    expect(judged(decision, input).verdict).toBe(MODEL_DEVIATED);
  });

  it('usd: another sum in its reason and not the amount ("the jar cost $35.00" beside 1500) is MODEL_DEVIATED, naming both', async () => {
    const input = refundCase();
    const decision = await decided(input, { amount_cents: 1_500, reason: 'Goodwill refund: the jar cost $35.00.' });
    expect(judged(decision, input)).toMatchObject({ verdict: MODEL_DEVIATED, problems: expect.stringContaining("asked for 1500 ($15.00), but its words never name that sum and name another: $35.00 in its reason") });
  });

  it('the prose beside the call is read for a units confusion ("Refunding ¥5,000" beside 500000), not for every sum it quotes ("they asked for $35.00")', async () => {
    const yen = refundIn('jpy', 1_000_000, 1_000_000);
    const confused = await decided(yen, { amount_cents: 500_000, reason: 'Goodwill refund for the cracked jar.' }, 'Refunding ¥5,000 as support agreed.');
    expect(judged(confused, yen).problems).toContain('5000 JPY in what it wrote beside the call');
    const input = refundCase();
    const quoted = await decided(input, { amount_cents: 1_500, reason: 'Goodwill refund for the cracked jar.' }, 'The customer asked for $35.00; support approved less.');
    expect(judged(quoted, input).verdict).toBe(ACCEPTED);
  });
});

describe('words that name the amount as called, or only sums the case states, leave the refund as called', () => {
  it.each([
    ['jpy', 5_000, 'Of the ¥10,000 order, refund ¥5,000 for the cracked jar.', undefined],
    ['jpy', 5_000, 'Partial refund on the ¥10,000 order for the cracked jar.', undefined],
    ['jpy', 5_000, 'Goodwill refund for the cracked jar, within the ¥20,000 approved.', 'The payment was ¥10,000; nothing was refunded before.'],
    ['kwd', 20_000, 'Goodwill refund of 20.000 KWD for the cracked jar.', undefined],
    ['kwd', 20_000, 'Goodwill refund of KWD 20.00 for the cracked jar.', undefined],
    ['usd', 2_000, 'Refund $20 of the $2,000 order for the cracked jar.', undefined],
    ['usd', 2_000, 'Goodwill refund for the cracked jar on the $100.00 payment.', undefined],
  ])('%s %i, "%s": accepted', async (currency, amount, reason, text) => {
    const input = currency === 'usd' ? refundCase() : currency === 'jpy' ? refundIn('jpy', 10_000, 20_000) : refundIn('kwd', 100_000, 100_000);
    const decision = await decided(input, { amount_cents: amount, reason }, text);
    expect(decision).not.toHaveProperty('deviations');
    expect(judged(decision, input).verdict).toBe(ACCEPTED);
  });
});

describe('a kwd figure that reads two ways ("KWD 1,500": 1.500 or 1,500 KWD) names another sum unless both readings are the call', () => {
  it.each([
    [1_500, 'Outage credit of KWD 1,500 for incident INC-0efaf1', MODEL_DEVIATED],
    [1_500_000, 'Outage credit of KWD 1,500 for incident INC-0efaf1', MODEL_DEVIATED],
    [1_500, 'Outage credit of 1.500 KWD for incident INC-0efaf1', ACCEPTED],
    [1_500_000, 'Outage credit of KWD 1,500.000 for incident INC-0efaf1', ACCEPTED],
  ])('kwd credit %i, "%s": %s', async (amount, description, verdict) => {
    const input = creditIn('kwd', 2_000_000);
    const decision = await decided(input, { amount_cents: amount, description });
    expect(judged(decision, input).verdict).toBe(verdict);
  });

  it('the problem names both readings', async () => {
    const input = creditIn('kwd', 2_000_000);
    const decision = await decided(input, { amount_cents: 1_500, description: 'Outage credit of KWD 1,500 for incident INC-0efaf1' });
    expect(judged(decision, input).problems).toContain('names another sum: 1.500 KWD or 1500.000 KWD');
  });
});

describe('a malformed call: a figure in the case\'s currency is weighed against the cap in that currency', () => {
  /** A 5000 refund on a ¥10,000 cap (or its like in `currency`) with `note`, a field issue_refund does not define, beside it. */
  async function withNote(currency: string, cap: number, note: string): Promise<string> {
    const input = refundIn(currency, 100_000, cap);
    server.reset();
    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 5_000, reason: 'As approved.', note }));
    try {
      const decision = await createAnthropicDecider(config()).decide(input);
      return checkDecision(decision, input.approval, input.kind, input).verdict;
    } catch (error) {
      if (error instanceof DeciderError) return error.code;
      throw error;
    } finally {
      server.reset();
    }
  }

  it.each([
    ['jpy', 10_000, 'the jar cost ¥5000', 'decision_invalid'],
    ['jpy', 10_000, 'the jar cost 5,000 yen', 'decision_invalid'],
    ['jpy', 10_000, 'also refund ¥50,000', MODEL_DEVIATED],
    ['kwd', 10_000, 'the jar cost KWD 5.000', 'decision_invalid'],
    ['kwd', 10_000, 'also refund KWD 50', MODEL_DEVIATED],
    ['usd', 10_000, 'the jar cost $50', 'decision_invalid'],
    ['usd', 10_000, 'also refund $500', MODEL_DEVIATED],
  ])('%s cap %i, note "%s": %s', async (currency, cap, note, verdict) => {
    expect(await withNote(currency, cap, note)).toBe(verdict);
  });
});

describe('through the decisions worker', () => {
  it('a jpy refund of 500000 whose reason says ¥5,000: deviated, nothing refunded, the approval unused', async () => {
    rig.useDecider(modelDecider(server));
    const intent = await rig.stripe.paymentIntents.create({ amount: 500_000, currency: 'jpy', payment_method: 'pm_card_visa', confirm: true });
    const approval = `ap_jpy_${uid()}`;
    await rig.stores.approvals.grant({ id: approval, approver: 'support-lead', capCents: 500_000, scope: `payment:${intent.id}`, expiresAt: Date.now() + 3_600_000, maxUses: 1 });
    const caseId = `jpy-${uid()}`;
    server.script(
      replies.toolUse('get_payment', {}),
      replies.toolUse('issue_refund', { amount_cents: 500_000, reason: 'Goodwill partial refund of ¥5,000 for the cracked jar, as support agreed.' }, { text: 'Support agreed ¥5,000, which is 500000 in cents.' }),
    );
    await rig.decisions.submit({ caseId, kind: 'refund', subject: intent.id, incident: null, story: 'The jar arrived cracked. Support agreed a goodwill partial refund of ¥5,000.', approval, agent: 'support-bot' }, 'sam');
    const record = await rig.decisions.waitFor(caseId, 15_000);
    server.reset();
    expect(record?.status).toMatchObject({ state: 'deviated', decision: { amountCents: 500_000 } });
    expect(await rig.refundsAt(intent.id)).toEqual([]);
    expect((await rig.stores.approvals.describe(approval)).snapshot).toMatchObject({ uses: 0, reservedCents: 0 });
  });
});
