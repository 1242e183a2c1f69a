// The receipt's final answer comes from post-send facts (DESIGN §8): an object's final state follows its own
// lifecycle, never the order webhooks arrived in, and a refund on a charge later charged back is exposure.
import { describe, expect, it } from 'vitest';
import { alertsFor } from '../../src/core/alert-rules.js';
import type { Draft } from '../../src/core/entries.js';
import { isChargeback } from '../../src/core/final-money.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { buildReceipt } from '../../src/core/receipt.js';
import { effectIdFor } from '../../src/core/effect-id.js';
import { chainReceipt, checks, drafts, refundObject, sealChain, snapshot, T0 } from './entry-chain.js';

const { key, publicKeys } = testKey();
const REFUND = 're_money';

const refund = (status: string, failureReason: string | null = null) => drafts.observed({ objectType: 'refund', objectId: REFUND, status, failureReason, amount: 2_000 });
const dispute = (status: string, overrides: { id?: string; charge?: string } = {}) =>
  drafts.observed({ objectType: 'dispute', objectId: overrides.id ?? 'du_money', eventType: 'charge.dispute.updated', status, disputeStatus: status, amount: 5_000, charge: overrides.charge ?? 'ch_chain', disputeReason: 'fraudulent' });

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, index) => permutations([...items.slice(0, index), ...items.slice(index + 1)]).map((rest) => [item, ...rest]));
}

/** Verifies a committed refund followed by these post-send facts; the receipt itself must be valid. */
function moneyAfter(facts: readonly Draft<'OBSERVED'>[], name = 'money') {
  const receipt = chainReceipt(name, [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed(REFUND), ...facts], key);
  const result = verify(receipt, { publicKeys });
  expect(result.problems).toEqual([]);
  return result;
}

describe('final money', () => {
  it('answers returned when the committed refund succeeded and nothing else happened', () => {
    const result = moneyAfter([]);
    expect(result.finalMoney).toMatchObject({ status: 'returned', failureReason: null });
    expect(result.answerMatchesFinalMoney).toBe(true);
    expect(result.exposure).toBeNull();
  });

  it.each(permutations([refund('pending'), refund('succeeded'), refund('failed', 'charge_for_pending_refund_disputed')]))(
    'a failed refund never becomes succeeded again, whatever order the events arrive in (%#)',
    (...facts) => {
      const result = moneyAfter(facts);
      expect(result.finalMoney.status).toBe('not_returned');
      expect(result.finalMoney.failureReason).toBe('charge_for_pending_refund_disputed');
      expect(result.finalMoney.refunds).toEqual([expect.objectContaining({ id: REFUND, status: 'failed' })]);
      expect(result.answerMatchesFinalMoney).toBe(false);
    },
  );

  it.each(permutations([refund('succeeded'), refund('canceled')]))('a canceled refund stays canceled whatever the order (%#)', (...facts) => {
    const result = moneyAfter(facts);
    expect(result.finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'canceled' });
  });

  it("the committed refund's facts decide, not another refund's recorded on the effect before it committed (verify still names that one)", () => {
    // While the send's answer was lost, a refund of the same amount carrying the effect's id failed and was recorded;
    // the effect then committed its own refund, which succeeded.
    const foreign = drafts.observed({ objectType: 'refund', objectId: 're_foreign', status: 'failed', failureReason: 'expired_or_canceled_card', amount: 2_000 });
    const receipt = chainReceipt('foreign-first', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), foreign, drafts.committed(REFUND), refund('succeeded')], key);
    const result = verify(receipt, { publicKeys });
    expect(result.finalMoney).toMatchObject({ status: 'returned', failureReason: null });
    expect(result.answerMatchesFinalMoney).toBe(true);
    expect(result.problems).toEqual([expect.stringContaining('an OBSERVED refund re_foreign is not the refund the effect committed')]);
  });

  // Rule: the failed_after_landed alert and the exposure are about the refund the effect committed, whose facts decide
  // the final money, not whichever refund was recorded first on the receipt. Both used to take the first refund
  // recorded (or the first that went out), so the alert said a foreign refund that succeeded had failed.
  it('the failed_after_landed alert names the committed refund that failed, not a foreign one recorded before it that succeeded', () => {
    const foreign = drafts.observed({ objectType: 'refund', objectId: 're_foreign', status: 'succeeded', amount: 2_000 });
    const ownFailed = drafts.observed({ objectType: 'refund', objectId: 're_own', status: 'failed', failureReason: 'expired_or_canceled_card', amount: 2_000 });
    const result = verify(chainReceipt('fal-foreign-first', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), foreign, drafts.committed('re_own'), ownFailed], key), { publicKeys });
    expect(result.finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'expired_or_canceled_card', refund: { id: 're_own', status: 'failed' } });
    const alert = alertsFor(result).find((a) => a.kind === 'failed_after_landed');
    expect(alert?.refund).toBe('re_own');
    expect(alert?.sentence).not.toContain('re_foreign');
  });

  it('a committed refund that failed is no exposure, even when a foreign refund recorded on the effect succeeded', () => {
    const foreign = drafts.observed({ objectType: 'refund', objectId: 're_foreign', status: 'succeeded', amount: 2_000 });
    const ownFailed = drafts.observed({ objectType: 'refund', objectId: 're_own', status: 'failed', failureReason: 'charge_for_pending_refund_disputed', amount: 2_000 });
    const result = verify(chainReceipt('fal-foreign-exposure', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), foreign, drafts.committed('re_own'), ownFailed, dispute('needs_response')], key), { publicKeys });
    expect(result.finalMoney.status).toBe('not_returned');
    expect(result.exposure).toBeNull();
  });

  // Rule: a refund status the code does not know (a value Stripe added) leaves the answer unknown, never returned
  // (DESIGN §3: it never guesses). It used to be ranked below every known status and dropped, so the answer stayed returned.
  it('a refund whose latest fact has a status the code does not know answers unknown until a later fact says something it knows', () => {
    const later = refund('reversed');
    const result = moneyAfter([later], 'unk-after');
    expect(result.finalMoney.status).toBe('unknown');
    // The lifecycle keeps the last status it knows; the one it does not is shown beside it.
    expect(result.finalMoney.refunds).toEqual([expect.objectContaining({ id: REFUND, status: 'succeeded', unrecognized: 'reversed' })]);
    expect(result.answerMatchesFinalMoney).toBeNull();
    expect(moneyAfter([later, refund('succeeded')], 'unk-then-known').finalMoney.status).toBe('returned');
    // A failed refund never becomes succeeded again, whatever unknown status came between.
    expect(moneyAfter([refund('failed', 'lost_or_stolen_card'), later, refund('succeeded')], 'unk-failed').finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'lost_or_stolen_card' });
  });

  it('answers pending while the refund is pending, and does not claim to match or mismatch', () => {
    const receipt = chainReceipt('pending', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed(REFUND, { result: { id: REFUND, object: 'refund', status: 'pending', amount: 2_000 } })], key);
    const result = verify(receipt, { publicKeys });
    expect(result.finalMoney.status).toBe('pending');
    expect(result.answerMatchesFinalMoney).toBeNull();
  });

  it.each(permutations([refund('succeeded'), dispute('needs_response')]))('a succeeded refund plus a chargeback on the same charge is exposure of both (%#)', (...facts) => {
    const result = moneyAfter(facts);
    expect(result.finalMoney.status).toBe('returned');
    expect(result.exposure).toMatchObject({ cents: 7_000, refundCents: 2_000, chargebackCents: 5_000, refund: REFUND, charge: 'ch_chain', dispute: 'du_money', disputes: ['du_money'] });
    expect(result.exposure?.sentence).toContain('charged back');
  });

  it('keeps the exposure when the dispute is lost', () => {
    expect(moneyAfter([dispute('needs_response'), dispute('under_review'), dispute('lost')]).exposure?.cents).toBe(7_000);
  });

  it.each(permutations([dispute('needs_response'), dispute('under_review'), dispute('won')]))('a won dispute is no exposure, even when "won" arrives before the earlier states (%#)', (...facts) => {
    const result = moneyAfter(facts);
    expect(result.finalMoney.disputes).toEqual([expect.objectContaining({ id: 'du_money', status: 'won' })]);
    expect(result.exposure).toBeNull();
  });

  it('a lost chargeback under appeal is still a chargeback: exposure, as the refund target counts it (not warning_*)', () => {
    for (const status of ['appeal_needs_response', 'appeal_under_review']) {
      expect(isChargeback(status)).toBe(true);
      expect(moneyAfter([dispute(status)]).exposure?.cents).toBe(7_000);
      // The appeal comes after the loss, and its end after it: the newest of those stands.
      expect(moneyAfter([dispute('needs_response'), dispute('lost'), dispute(status)]).finalMoney.disputes).toEqual([expect.objectContaining({ status })]);
    }
    expect(moneyAfter([dispute('lost'), dispute('appeal_under_review'), dispute('won')]).exposure).toBeNull();
  });

  it('an inquiry (warning_*) is not a chargeback and is no exposure', () => {
    for (const status of ['warning_needs_response', 'warning_under_review', 'warning_closed']) {
      expect(isChargeback(status)).toBe(false);
      expect(moneyAfter([dispute(status)]).exposure).toBeNull();
    }
    expect(isChargeback('needs_response')).toBe(true);
  });

  it('a prevented dispute, or one closed because the charge was refunded, withdraws nothing and is no exposure', () => {
    for (const status of ['prevented', 'charge_refunded']) {
      expect(isChargeback(status)).toBe(false);
      expect(moneyAfter([dispute(status)]).exposure).toBeNull();
    }
  });

  it('an inquiry that escalates to a chargeback becomes exposure', () => {
    expect(moneyAfter([dispute('warning_needs_response'), dispute('warning_closed'), dispute('needs_response')]).exposure?.cents).toBe(7_000);
  });

  it('a chargeback on another charge is no exposure for this refund', () => {
    expect(moneyAfter([dispute('needs_response', { charge: 'ch_other' })]).exposure).toBeNull();
  });

  it('a failed refund plus a chargeback is no exposure: the refund never went out', () => {
    const result = moneyAfter([dispute('needs_response'), refund('failed', 'charge_for_pending_refund_disputed')]);
    expect(result.finalMoney.status).toBe('not_returned');
    expect(result.exposure).toBeNull();
  });

  // Rule: a chargeback is the payment's, and each exposure alert of a refund on the payment counts it whole (no receipt
  // knows the others' refunds), so the alert says so instead of claiming a total for the payment. With two of our
  // refunds on one charge, each alert used to say "$70.00 out on one payment" while $90 was, together claiming $140.
  it('each exposure alert on a charge that two refunds share says the chargeback is counted in both', () => {
    const shared = drafts.observed({ objectType: 'dispute', objectId: 'du_shared', status: 'needs_response', disputeStatus: 'needs_response', amount: 5_000, disputeReason: 'fraudulent' });
    for (const own of ['re_a', 're_b']) {
      const result = verify(chainReceipt(`shared-${own}`, [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed(own, { result: refundObject(own, { currency: 'usd' }) }), shared], key), { publicKeys });
      expect(result.problems).toEqual([]);
      const alert = alertsFor(result).find((a) => a.kind === 'exposure');
      expect(alert).toMatchObject({ centsAtStake: 7_000, refund: own, disputes: ['du_shared'] });
      expect(alert?.sentence).not.toMatch(/out on one payment/);
      expect(alert?.sentence).toMatch(/chargeback du_shared .*\$70\.00 at stake with this refund \(another refund of the payment counts the chargeback too\)\./);
    }
  });

  it('sums every chargeback on the charge', () => {
    const result = moneyAfter([dispute('needs_response'), dispute('needs_response', { id: 'du_second' })]);
    expect(result.exposure).toMatchObject({ cents: 12_000, chargebackCents: 10_000, disputes: ['du_money', 'du_second'] });
  });
});

describe('final money of a credit', () => {
  const credit = { kind: 'credit', customer: 'cus_chain', amount: 1_000, incident: 'INC-chain' };
  const premises = { subscription_status: 'active', incident_compensation: 0 };
  const approval = snapshot({ scope: 'customer:cus_chain' });
  const sent = [
    { ...drafts.proposed(), effect: credit, premises },
    drafts.authorized(approval),
    { ...drafts.dispatched(), effect: credit, premises, checks: checks({ approval }) },
  ];
  const creditReceipt = (name: string, list: readonly Draft<'OBSERVED' | 'PROPOSED' | 'AUTHORIZED' | 'DISPATCHED' | 'AMBIGUOUS' | 'RESOLVED' | 'COMMITTED'>[]) => {
    const effectId = effectIdFor({ requestId: name, effect: credit });
    return buildReceipt(effectId, sealChain(effectId, list, key), key, T0 + 60_000);
  };
  // Billing's credit note for the same incident is recorded on the credit effect (a second compensation), but it is
  // billing's money, not this effect's: it says nothing about whether this credit landed.
  const billingNote = (status: string) => drafts.observed({ objectType: 'credit_note', objectId: 'cn_billing', eventType: `credit_note.${status === 'void' ? 'voided' : 'created'}`, status, amount: 1_000, charge: null, currency: 'usd' });

  it.each(['issued', 'void'])('a credit note by others for the incident (%s) does not make an unsettled credit returned', (status) => {
    const result = verify(creditReceipt(`open-${status}`, [...sent, billingNote(status)]), { publicKeys });
    expect(result.problems).toEqual([]);
    expect(result.happened).toBe('unknown');
    expect(result.finalMoney.status).toBe('unknown');
    // Nobody knows yet whether this credit landed: no second compensation to report.
    expect(result.compensatedTwice).toBeNull();
  });

  // A landed credit and billing's issued note for its incident compensate the customer twice; a voided note does not,
  // in whatever order its facts were recorded (a note once void is never issued again).
  const landed = { kind: 'COMMITTED', via: 'send', result: { id: 'cbtxn_own', object: 'customer_balance_transaction', amount: -1_000, currency: 'usd' }, found: 'cbtxn_own', rechecked: null, epoch: 1 } as const;
  it.each([
    ['issued', [billingNote('issued')], { cents: 1_000, ownCents: 1_000, notesCents: 1_000, creditNotes: ['cn_billing'], incident: 'INC-chain' }],
    ['issued, then voided', [billingNote('issued'), billingNote('void')], null],
    ['voided, recorded before its issue', [billingNote('void'), billingNote('issued')], null],
  ])('a landed credit with billing\'s note %s', (name, notes, expected) => {
    const result = verify(creditReceipt(`twice-${name}`, [...sent, landed, ...notes]), { publicKeys });
    expect(result.problems).toEqual([]);
    expect(result.answer).toBe('returned');
    if (expected === null) expect(result.compensatedTwice).toBeNull();
    else expect(result.compensatedTwice).toMatchObject(expected);
  });

  it('the part paid twice is the smaller compensation', () => {
    const small = drafts.observed({ objectType: 'credit_note', objectId: 'cn_small', eventType: 'credit_note.created', status: 'issued', amount: 250, charge: null, currency: 'usd' });
    expect(verify(creditReceipt('twice-small', [...sent, landed, small]), { publicKeys }).compensatedTwice).toMatchObject({ cents: 250, notesCents: 250, ownCents: 1_000 });
  });

  it('a note whose latest fact names another incident (billing re-tagged it) is no second compensation; one recorded before facts named incidents still is', () => {
    const tagged = (incident: string | null) => ({ ...billingNote('issued'), incident });
    const retagged = verify(creditReceipt('twice-retagged', [...sent, landed, tagged('INC-chain'), tagged('INC-other')]), { publicKeys });
    expect(retagged.problems).toEqual([]);
    expect(retagged.compensatedTwice).toBeNull();
    expect(verify(creditReceipt('twice-untagged', [...sent, landed, tagged('INC-chain'), tagged(null)]), { publicKeys }).compensatedTwice).toBeNull();
    expect(verify(creditReceipt('twice-tagged-back', [...sent, landed, tagged('INC-other'), tagged('INC-chain')]), { publicKeys }).compensatedTwice).toMatchObject({ creditNotes: ['cn_billing'] });
    expect(verify(creditReceipt('twice-old-fact', [...sent, landed, billingNote('issued')]), { publicKeys }).compensatedTwice).toMatchObject({ creditNotes: ['cn_billing'] });
  });

  it('a balance credit others tagged with the incident is a second compensation, and no landing of this credit', () => {
    const billing = drafts.observed({ objectType: 'customer_balance_transaction', objectId: 'cbtxn_billing', eventType: 'customer.updated', status: 'credited', amount: -700, charge: null, incident: 'INC-chain' });
    expect(verify(creditReceipt('twice-balance', [...sent, landed, billing]), { publicKeys }).compensatedTwice).toMatchObject({ cents: 700, ownCents: 1_000, notesCents: 700, creditNotes: [], balanceCredits: ['cbtxn_billing'] });
    expect(verify(creditReceipt('open-balance', [...sent, billing]), { publicKeys }).finalMoney.status).toBe('unknown');
  });

  // Rule: the balance transaction the credit's send made (its COMMITTED result) is its own, whatever incident a fact
  // recorded for it later says (metadata edited at Stripe): never billing's second compensation.
  it('its own balance transaction, recorded later with the incident in its metadata, is no second compensation', () => {
    const ownTagged = drafts.observed({ objectType: 'customer_balance_transaction', objectId: 'cbtxn_own', eventType: 'customer.updated', status: 'credited', amount: -1_000, charge: null, incident: 'INC-chain' });
    const result = verify(creditReceipt('own-tagged', [...sent, landed, ownTagged]), { publicKeys });
    expect(result.problems).toEqual([]);
    expect(result.compensatedTwice).toBeNull();
    expect(result.finalMoney.status).toBe('returned');
  });

  it('a person who found the ambiguous credit did not land is not contradicted by billing\'s credit note', () => {
    const effectId = effectIdFor({ requestId: 'ambiguous-note', effect: credit });
    const list = [
      ...sent,
      { kind: 'AMBIGUOUS', reason: 'nobody can tell', rechecked: null, epoch: 1 } as const,
      billingNote('issued'),
      { kind: 'RESOLVED', item: `ambiguous:${effectId}`, action: 'resolve', by: { name: 'alex', role: 'approver' }, note: 'no balance transaction at Stripe', resolution: 'did_not_land', reapproval: null } as const,
    ];
    const result = verify(buildReceipt(effectId, sealChain(effectId, list, key), key, T0 + 60_000), { publicKeys });
    expect(result.problems).toEqual([]);
    expect(result).toMatchObject({ answer: 'not_returned', answerFrom: 'operator', finalMoney: { status: 'unknown' } });
    expect(result.answerMatchesFinalMoney).not.toBe(false);
  });

  it('the credit\'s own balance transaction, seen while its dispatch is open, is returned', () => {
    const own = drafts.observed({ objectType: 'customer_balance_transaction', objectId: 'cbtxn_own', eventType: 'customer.updated', status: 'credited', amount: -1_000, charge: null });
    expect(verify(creditReceipt('open-own', [...sent, own]), { publicKeys }).finalMoney.status).toBe('returned');
  });
});

