// Rule: every check of the chaos run's contract fails on an observation that breaks it (a second refund for one
// effect, a cap exceeded, a receipt whose final money disagrees with Stripe, …), and none fails on one that keeps it,
// so a run whose findings are empty cannot have passed vacuously.
import { describe, expect, it } from 'vitest';
import { CHECKS, contractFindings, type Check, type ChaosRequest, type Observation } from '../../scenarios/chaos-checks.js';

const refundRequest: ChaosRequest = { requestId: 's-1-0', kind: 'refund', subject: 'payment:pi_1', approval: 'ap_refund', amount: 1_000, incident: null, body: { request_id: 's-1-0', payment_intent: 'pi_1', amount: 1_000, approval: 'ap_refund' } };
const creditRequest: ChaosRequest = { requestId: 'c-1-0-a', kind: 'credit', subject: 'customer:cus_1', approval: 'ap_credit', amount: 500, incident: 'inc-0', body: { request_id: 'c-1-0-a', customer: 'cus_1', amount: 500, incident: 'inc-0', approval: 'ap_credit' } };
const receipt = { valid: true, problems: [], happened: true, finalMoney: 'returned' } as const;

/** A run where the contract held: one refund and one credit, each committed once, their receipts agreeing with Stripe. */
function held(): Observation {
  return {
    sent: [
      { request: refundRequest, answer: { status: 202, effectId: 'ef_refund', errorCode: null, tries: 1, transient: [] } },
      { request: refundRequest, answer: { status: 200, effectId: 'ef_refund', errorCode: null, tries: 3, transient: ['502 ', 'transport fetch failed'] } },
      { request: creditRequest, answer: { status: 202, effectId: 'ef_credit', errorCode: null, tries: 1, transient: [] } },
    ],
    effects: [
      { effectId: 'ef_refund', request: refundRequest, settled: true, state: 'settled', outcome: 'COMMITTED_BY_RETRY', journal: ['PROPOSED', 'DISPATCHED', 'COMMITTED'], inboxOpen: false, receipt: { ...receipt, problems: [] } },
      { effectId: 'ef_credit', request: creditRequest, settled: true, state: 'settled', outcome: 'COMMITTED', journal: ['PROPOSED', 'DISPATCHED', 'COMMITTED'], inboxOpen: false, receipt: { ...receipt, problems: [] } },
    ],
    stripe: {
      refunds: [{ id: 're_1', effectId: 'ef_refund', paymentIntent: 'pi_1', amount: 1_000, status: 'succeeded' }],
      credits: [{ id: 'cbtxn_1', effectId: 'ef_credit', customer: 'cus_1', incident: 'inc-0', amount: -500 }],
    },
    caps: [{ subject: 'payment:pi_1', cents: 1_000 }],
    approvals: [
      { id: 'ap_refund', capCents: 1_000, maxUses: 1 },
      { id: 'ap_credit', capCents: 500, maxUses: 1 },
    ],
  };
}

/** Each check, and an observation that breaks it: `held()` changed in one way. */
const VIOLATIONS: Record<Check, { what: string; change(observation: Observation): void }> = {
  UNANSWERED: { what: 'a request never answered but with 5xx or transport failures', change: (o) => void (o.sent[0] = { request: refundRequest, answer: { status: 0, effectId: null, errorCode: null, tries: 40, transient: ['503 redis_unavailable'] } }) },
  REJECTED: { what: 'a valid request refused with a 4xx', change: (o) => void (o.sent[0] = { request: refundRequest, answer: { status: 400, effectId: null, errorCode: 'invalid_request', tries: 1, transient: [] } }) },
  TWO_PAYLOADS_ACCEPTED: { what: 'one request id accepted with two amounts', change: (o) => void o.sent.push({ request: { ...refundRequest, amount: 1_200 }, answer: { status: 202, effectId: 'ef_refund', errorCode: null, tries: 1, transient: [] } }) },
  TWO_EFFECT_IDS: { what: 'one request id answered with two effects', change: (o) => void o.sent.push({ request: refundRequest, answer: { status: 202, effectId: 'ef_other', errorCode: null, tries: 1, transient: [] } }) },
  SAME_PAYLOAD_CONFLICT: { what: 'a replay of the same payload answered as a conflict', change: (o) => void o.sent.push({ request: refundRequest, answer: { status: 409, effectId: null, errorCode: 'conflicting_payload', tries: 1, transient: [] } }) },
  UNSETTLED: { what: 'an acknowledged effect that never settled', change: (o) => void Object.assign(o.effects[0] ?? {}, { settled: false, state: 'dispatched', outcome: null }) },
  DOUBLE_REFUND: { what: 'a second refund for one effect', change: (o) => void o.stripe.refunds.push({ id: 're_2', effectId: 'ef_refund', paymentIntent: 'pi_1', amount: 1_000, status: 'succeeded' }) },
  DOUBLE_CREDIT: { what: 'a second credit for one effect', change: (o) => void o.stripe.credits.push({ id: 'cbtxn_2', effectId: 'ef_credit', customer: 'cus_1', incident: 'inc-0-again', amount: -500 }) },
  INCIDENT_TWICE: { what: 'one incident credited twice by two effects', change: (o) => void o.stripe.credits.push({ id: 'cbtxn_3', effectId: 'ef_stray', customer: 'cus_1', incident: 'inc-0', amount: -500 }) },
  CAP_EXCEEDED: { what: "more refunded on a payment than its subject cap", change: (o) => void o.stripe.refunds.push({ id: 're_4', effectId: 'ef_stray', paymentIntent: 'pi_1', amount: 500, status: 'pending' }) },
  APPROVAL_CAP_EXCEEDED: { what: "more moved under an approval than its cap", change: (o) => void Object.assign(o.approvals[1] ?? {}, { capCents: 400 }) },
  APPROVAL_USES_EXCEEDED: { what: 'an approval used more times than it allows', change: (o) => void Object.assign(o.approvals[0] ?? {}, { maxUses: 0 }) },
  STRIPE_OBJECT_OF_UNKNOWN_EFFECT: { what: 'money moved for an effect no request was acknowledged with', change: (o) => void o.stripe.refunds.push({ id: 're_5', effectId: 'ef_unknown', paymentIntent: 'pi_9', amount: 700, status: 'succeeded' }) },
  WRONG_AMOUNT: { what: 'a refund of another amount than asked', change: (o) => void Object.assign(o.stripe.refunds[0] ?? {}, { amount: 900 }) },
  COMMITTED_BUT_NOTHING: { what: 'a committed effect with nothing at Stripe', change: (o) => void (o.stripe.credits = []) },
  REFUSED_BUT_MONEY: { what: 'a refused effect whose money moved', change: (o) => void Object.assign(o.effects[0] ?? {}, { outcome: 'REFUSED:over_cap' }) },
  AMBIGUOUS_NO_INBOX: { what: 'an AMBIGUOUS effect with no open inbox item', change: (o) => void Object.assign(o.effects[0] ?? {}, { outcome: 'AMBIGUOUS', inboxOpen: false }) },
  NO_RECEIPT: { what: 'an effect without a receipt', change: (o) => void Object.assign(o.effects[1] ?? {}, { receipt: null }) },
  RECEIPT_INVALID: { what: 'a receipt that does not verify', change: (o) => void Object.assign(o.effects[1] ?? {}, { receipt: { ...receipt, valid: false, problems: ['entry 2: signature does not verify'] } }) },
  FINAL_MONEY_WRONG: { what: "a receipt whose final money disagrees with Stripe's refund", change: (o) => void Object.assign(o.effects[0] ?? {}, { receipt: { ...receipt, problems: [], finalMoney: 'not_returned' } }) },
  RECEIPT_SAYS_HAPPENED_NOTHING_AT_STRIPE: { what: 'a receipt that says the effect happened when Stripe holds nothing of it', change: (o) => {
      Object.assign(o.effects[0] ?? {}, { outcome: 'AMBIGUOUS', inboxOpen: true });
      o.stripe.refunds = [];
    },
  },
};

describe('the chaos run contract checks', () => {
  it('find nothing in a run where the contract held, replays and retried answers included', () => {
    expect(contractFindings(held())).toEqual([]);
  });

  it('have an observation breaking each of them', () => {
    expect(Object.keys(VIOLATIONS).sort()).toEqual([...CHECKS].sort());
  });

  it.each((Object.keys(VIOLATIONS) as Check[]).map((check) => [check, VIOLATIONS[check].what] as const))('%s fails on %s', (check) => {
    const observation = held();
    VIOLATIONS[check].change(observation);
    const findings = contractFindings(observation);
    expect(findings.map((finding) => finding.check)).toContain(check);
  });
});
