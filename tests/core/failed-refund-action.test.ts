// RULE: what the failed_after_landed alert tells the operator follows the payment's disputes as money: an open
// chargeback (needs_response, under_review, or under appeal) will return the money if it is lost, so do not refund
// again; a lost chargeback already returned it, so do not refund again; an inquiry (open or closed), a won chargeback
// or none returns nothing, so decide whether to refund again under a new approval.
import { describe, expect, it } from 'vitest';
import { alertsFor } from '../../src/core/alert-rules.js';
import type { Draft } from '../../src/core/entries.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { chainReceipt, drafts } from './entry-chain.js';

const { key, publicKeys } = testKey();
const REFUND = 're_failed_action';

const failed = drafts.observed({ objectType: 'refund', objectId: REFUND, status: 'failed', failureReason: 'expired_or_canceled_card', amount: 2_000 });
const dispute = (status: string): Draft<'OBSERVED'> =>
  drafts.observed({ objectType: 'dispute', objectId: `du_${status}`, eventType: 'charge.dispute.updated', status, disputeStatus: status, amount: 10_000, disputeReason: 'fraudulent' });

function failedAfterLandedAction(disputeStatuses: readonly string[]): string | undefined {
  const receipt = chainReceipt(`failed-action-${disputeStatuses.join('-')}`, [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed(REFUND), failed, ...disputeStatuses.map(dispute)], key);
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

  it.each([[[]], [['warning_needs_response']], [['warning_under_review']], [['warning_closed']], [['won']], [['prevented']], [['charge_refunded']]])('no chargeback that moves money (%j): refund again under a new approval', (statuses) => {
    const action = failedAfterLandedAction(statuses);
    expect(action).toMatch(/refund again under a new approval/);
    expect(action).not.toMatch(/do not refund again|dispute will return the money/i);
  });
});
