// Rule (DESIGN §3 I4, "never an effect the model did not ask for"): a well-formed issue_refund/issue_credit whose own
// words (its reason or description, or the prose beside the call) name its amount in whole units, a money figure equal
// to amount_cents read as units ("$20.00" or "20.00 USD" beside amount_cents 20), is not sent as called: it is
// MODEL_DEVIATED, recorded with the cents its words name (2000) and a problem naming the 20 it called for, so the inbox
// shows both, and the approval is not used. Words that name the amount as called ("$0.20", "20 cents", "$20" beside
// 2000), name no money figure (an order number, "2 items", "refund 20"), or a case in a currency without cents (jpy)
// leave the decision as called.
import { beforeAll, describe, expect, it } from 'vitest';
import { inboxItemId } from '../../src/core/inbox.js';
import { checkDecision, MODEL_DEVIATED } from '../../src/decider/check.js';
import { createAnthropicDecider, type Decision, type DecisionCase } from '../../src/decider/decider.js';
import { casesSuite, modelDecider, type CasesRig } from '../support/cases-rig.js';
import { uid } from '../http/rig.js';
import { creditCase, PAYMENT, refundCase } from './cases.js';
import { configFor } from './decider-support.js';
import { replies, type MessagesServer } from './messages-server.js';

const suite = casesSuite();
let rig: CasesRig;
let server: MessagesServer;
beforeAll(() => {
  rig = suite.rig();
  server = suite.server();
});
const config = configFor(() => server);

/** The decision the Anthropic decider makes on `input` when the model looks the facts up, then makes `call` with `text` beside it. */
async function decided(input: DecisionCase, call: Record<string, unknown>, text?: string): Promise<Decision> {
  const lookup = input.kind === 'refund' ? 'get_payment' : 'get_account';
  const tool = input.kind === 'refund' ? 'issue_refund' : 'issue_credit';
  server.script(replies.toolUse(lookup, {}), replies.toolUse(tool, call, text === undefined ? {} : { text }));
  const decision = await createAnthropicDecider(config()).decide(input);
  server.reset();
  return decision;
}

/** checkDecision's verdict and problems for `decision` on `input`'s approval and facts. */
function judged(decision: Decision, input: DecisionCase): { verdict: string; problems: string } {
  const check = checkDecision(decision, input.approval, input.kind, input);
  return { verdict: check.verdict, problems: check.verdict === MODEL_DEVIATED ? check.problems.join('; ') : '' };
}

describe('a money call whose own words name its amount in whole units is a deviation, not sent as called', () => {
  it('issue_refund 20 cents, its reason "$20.00" and prose "$20" on a $20 approval: MODEL_DEVIATED with the 2000 its words name and the 20 it called', async () => {
    const input = refundCase();
    const decision = await decided(input, { amount_cents: 20, reason: 'Goodwill refund of $20.00 for the cracked jar, the full approved amount.' }, 'The approved amount is $20, so I refund 20.');
    expect(decision).toMatchObject({ action: 'refund', amountCents: 2_000 });
    expect((decision as { text: string }).text).toContain('issue_refund 20 cents');
    const { verdict, problems } = judged(decision, input);
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain("the model's issue_refund call asked for 20 cents, but its reason names 20 in whole units, 2000 cents ($20.00)");
    expect(problems).toContain('$20.00 for the cracked');
  });

  it('the figure only in the prose beside the call ("20.00 USD"), or only in a credit\'s description ("$10"): a deviation too', async () => {
    const refund = refundCase();
    const byProse = await decided(refund, { amount_cents: 20, reason: 'Goodwill refund for the cracked jar, as approved.' }, 'Refunding 20.00 USD as support approved.');
    expect(byProse).toMatchObject({ amountCents: 2_000 });
    expect(judged(byProse, refund).problems).toContain('but what it wrote beside the call names 20 in whole units, 2000 cents ($20.00)');
    const credit = creditCase();
    const described = await decided(credit, { amount_cents: 10, description: 'A $10 credit for the outage during INC-0efaf1.' });
    expect(described).toMatchObject({ action: 'credit', amountCents: 1_000 });
    expect(judged(described, credit)).toMatchObject({ verdict: MODEL_DEVIATED, problems: expect.stringContaining("the model's issue_credit call asked for 10 cents, but its description names 10 in whole units, 1000 cents ($10.00)") });
  });

  it('through the decisions worker: nothing is refunded, the approval is not used, and the inbox item holds 2000 with the 20 called in its problems', async () => {
    rig.useDecider(modelDecider(server));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const caseId = `units-${uid()}`;
    server.script(
      replies.toolUse('get_payment', {}),
      replies.toolUse('issue_refund', { amount_cents: 20, reason: 'Goodwill refund of $20.00 for the cracked jar, the full approved amount.' }, { text: 'The approved amount is $20, so I refund 20.' }),
    );
    await rig.decisions.submit({ caseId, kind: 'refund', subject: paymentIntent, incident: null, story: 'The jar arrived cracked; support approved a $20 goodwill refund.', approval, agent: 'support-bot' }, 'sam');
    const record = await rig.decisions.waitFor(caseId, 15_000);
    expect(record?.status).toMatchObject({ state: 'deviated', decision: { amountCents: 2_000 } });
    expect(await rig.refundsAt(paymentIntent)).toEqual([]);
    expect((await rig.stores.approvals.describe(approval)).snapshot).toMatchObject({ uses: 0, reservedCents: 0 });
    const item = await rig.stores.inbox.get(inboxItemId('model_deviated', record?.status.effectId ?? ''));
    expect(item).toMatchObject({ kind: 'model_deviated', status: 'open', centsAtStake: 2_000, happened: expect.stringContaining('asked for 20 cents') });
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
