// RULE: what the failed_after_landed alert tells the operator follows the payment's disputes as money: an open
// chargeback (needs_response, under_review, or under appeal) will return the money if it is lost, so do not refund
// again; a lost chargeback on the refund's charge already returned it, as far as its amount goes, so do not refund
// again only when it covers the refund; an inquiry (open or closed), a won chargeback
// or none returns nothing, so decide whether to refund again under a new approval.
import { describe, expect, it } from 'vitest';
import { alertsFor } from '../../src/core/alert-rules.js';
import type { Draft } from '../../src/core/entries.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { chainReceipt, drafts, refundObject } from './entry-chain.js';

const { key, publicKeys } = testKey();
const REFUND = 're_failed_action';

/** The refund's commit: its result names its currency, as Stripe's does. */
const committed = drafts.committed(REFUND, { result: refundObject(REFUND, { currency: 'usd' }) });
const failed = drafts.observed({ objectType: 'refund', objectId: REFUND, status: 'failed', failureReason: 'expired_or_canceled_card', amount: 2_000 });
const dispute = (status: string): Draft<'OBSERVED'> =>
  drafts.observed({ objectType: 'dispute', objectId: `du_${status}`, eventType: 'charge.dispute.updated', status, disputeStatus: status, amount: 10_000, disputeReason: 'fraudulent' });

function failedAfterLandedAction(disputeStatuses: readonly string[]): string | undefined {
  const receipt = chainReceipt(`failed-action-${disputeStatuses.join('-')}`, [drafts.proposed(), drafts.authorized(), drafts.dispatched(), committed, failed, ...disputeStatuses.map(dispute)], key);
  const verification = verify(receipt, { publicKeys });
  expect(verification.problems).toEqual([]);
  return alertsFor(verification).find((alert) => alert.kind === 'failed_after_landed')?.action;
}

describe('failed_after_landed: the action follows the disputes as money', () => {
  it.each(['needs_response', 'under_review', 'appeal_needs_response', 'appeal_under_review'])('an open chargeback (%s) will return the money if lost: do not refund again', (status) => {
    expect(failedAfterLandedAction([status])).toMatch(/dispute will return the money if it is lost.*do not refund again unless the dispute is won/);
  });

  it('a lost chargeback already returned the money: says so, and not to refund again', () => {
    const action = failedAfterLandedAction(['lost']);
    expect(action).toMatch(/already got the money back through the lost chargeback du_lost/);
    expect(action).toMatch(/do not refund again/i);
    expect(action).not.toMatch(/refund again under a new approval/);
  });

  // Rule: "the customer already got the money back, do not refund again" only when the lost chargebacks on the refund's
  // charge returned at least the refund's amount. Any lost chargeback used to count, a $5 one for a $20 refund or one
  // on another charge, leaving the customer short.
  describe('a lost chargeback that does not cover the refund', () => {
    const lost = (amount: number, charge = 'ch_chain') =>
      drafts.observed({ objectType: 'dispute', objectId: 'du_lost', eventType: 'charge.dispute.closed', status: 'lost', disputeStatus: 'lost', amount, charge, disputeReason: 'product_not_received' });
    const actionWith = (name: string, disputes: readonly Draft<'OBSERVED'>[]) => {
      const verification = verify(chainReceipt(name, [drafts.proposed(), drafts.authorized(), drafts.dispatched(), committed, failed, ...disputes], key), { publicKeys });
      expect(verification.problems).toEqual([]);
      return alertsFor(verification).find((alert) => alert.kind === 'failed_after_landed')?.action ?? '';
    };

    it('a partial chargeback ($5) lost leaves $15 of a failed $20 refund owed', () => {
      const action = actionWith('pf-partial', [lost(500)]);
      expect(action).not.toMatch(/already got the money back|do not refund again/i);
      expect(action).toMatch(/lost chargeback du_lost gave the customer back \$5\.00 of the \$20\.00 refund: \$15\.00 is still owed.*refund \$15\.00 again under a new approval/);
    });

    it('a lost chargeback on another charge gave back nothing of this refund', () => {
      const action = actionWith('pf-other-charge', [lost(10_000, 'ch_other')]);
      expect(action).toBe('Tell the customer, and decide whether to refund again under a new approval (a new request).');
    });

    it('a partial chargeback lost while another is open: the open one may return the rest', () => {
      const open = drafts.observed({ objectType: 'dispute', objectId: 'du_open', status: 'needs_response', disputeStatus: 'needs_response', amount: 1_500, disputeReason: 'fraudulent' });
      expect(actionWith('pf-partial-open', [lost(500), open])).toMatch(/\$15\.00 is still owed\. The charge is disputed: .*do not refund again unless the dispute is won/);
    });
  });

  it.each([[[]], [['warning_needs_response']], [['warning_under_review']], [['warning_closed']], [['won']], [['prevented']], [['charge_refunded']]])('no chargeback that moves money (%j): refund again under a new approval', (statuses) => {
    const action = failedAfterLandedAction(statuses);
    expect(action).toMatch(/refund again under a new approval/);
    expect(action).not.toMatch(/do not refund again|dispute will return the money/i);
  });
});
