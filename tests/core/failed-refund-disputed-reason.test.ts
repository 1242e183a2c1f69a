// Rule: a refund Stripe failed with charge_for_pending_refund_disputed is on a charge that is charged back, whatever
// the dispute facts recorded so far say: the dispute's own events can come after refund.failed, or never (dropped),
// so the failed_after_landed alert must not tell the operator to refund again while the facts show only the inquiry,
// or no dispute at all (the chargeback may return the same money: the customer would get it twice). It advises as for
// an open chargeback until a chargeback on the charge is recorded decided; then it advises by that end, as before.
import { describe, expect, it } from 'vitest';
import { alertsFor } from '../../src/core/alert-rules.js';
import type { Draft } from '../../src/core/entries.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { chainReceipt, drafts, refundObject } from './entry-chain.js';

const { key, publicKeys } = testKey();
const REFUND = 're_failed_disputed';

const committed = drafts.committed(REFUND, { result: refundObject(REFUND, { currency: 'usd' }) });
const failed = (failureReason: string) => drafts.observed({ objectType: 'refund', objectId: REFUND, eventType: 'refund.failed', status: 'failed', failureReason, amount: 2_000 });
const dispute = (status: string, charge = 'ch_chain'): Draft<'OBSERVED'> =>
  drafts.observed({ objectType: 'dispute', objectId: 'du_disputed', eventType: 'charge.dispute.created', status, disputeStatus: status, amount: 10_000, charge, disputeReason: 'fraudulent' });

function actionAfter(name: string, failureReason: string, disputes: readonly Draft<'OBSERVED'>[]): string {
  const receipt = chainReceipt(name, [drafts.proposed(), drafts.authorized(), drafts.dispatched(), committed, failed(failureReason), ...disputes], key);
  const verification = verify(receipt, { publicKeys });
  expect(verification.problems).toEqual([]);
  return alertsFor(verification).find((alert) => alert.kind === 'failed_after_landed')?.action ?? '';
}

describe('failed_after_landed: charge_for_pending_refund_disputed says the charge is charged back', () => {
  it.each([
    ['only the inquiry recorded', [dispute('warning_needs_response')]],
    ['the inquiry recorded under review', [dispute('warning_under_review')]],
    ['no dispute recorded', []],
    ['only a chargeback on another charge recorded', [dispute('won', 'ch_other')]],
  ])('%s: do not refund again unless the dispute is won', (_, disputes) => {
    const action = actionAfter(`disputed-${disputes.map((d) => d.status).join('-') || 'none'}`, 'charge_for_pending_refund_disputed', disputes);
    expect(action).toMatch(/charged back.*charge_for_pending_refund_disputed.*dispute will return the money if it is lost.*do not refund again unless the dispute is won by the merchant/);
    expect(action).not.toMatch(/refund again under a new approval/);
  });

  it('the chargeback recorded open: the advice is the open chargeback\'s, as before', () => {
    expect(actionAfter('disputed-open', 'charge_for_pending_refund_disputed', [dispute('needs_response')])).toBe(
      'The charge is disputed: the dispute will return the money if it is lost. Tell the customer; do not refund again unless the dispute is won by the merchant.',
    );
  });

  it('the chargeback recorded won: the customer is owed the refund, so decide whether to refund again', () => {
    expect(actionAfter('disputed-won', 'charge_for_pending_refund_disputed', [dispute('won')])).toBe('Tell the customer, and decide whether to refund again under a new approval (a new request).');
  });

  it('the chargeback recorded lost: it returned the money', () => {
    expect(actionAfter('disputed-lost', 'charge_for_pending_refund_disputed', [dispute('lost')])).toMatch(/already got the money back through the lost chargeback du_disputed.*do not refund again\.$/);
  });

  it('another failure reason with only the inquiry recorded: the inquiry returns nothing, so refund again may be right', () => {
    expect(actionAfter('expired-inquiry', 'expired_or_canceled_card', [dispute('warning_needs_response')])).toMatch(/refund again under a new approval/);
  });
});
