// Rule: a failed_after_landed alert's centsAtStake is what the customer is still owed, the figure its action names:
// the refund's amount less what lost chargebacks on the refund's charge already gave back, never below 0. It counted
// the whole refund even when a lost chargeback had returned all of it ("do not refund again"), so the open-alerts
// totals showed money at stake that was not.
import { describe, expect, it } from 'vitest';
import { alertsFor } from '../../src/core/alert-rules.js';
import type { Draft } from '../../src/core/entries.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { chainReceipt, drafts, refundObject } from './entry-chain.js';

const { key, publicKeys } = testKey();
const REFUND = 're_failed_at_stake';

const committed = drafts.committed(REFUND, { result: refundObject(REFUND, { currency: 'usd' }) });
const failed = drafts.observed({ objectType: 'refund', objectId: REFUND, status: 'failed', failureReason: 'expired_or_canceled_card', amount: 2_000 });
const dispute = (id: string, status: string, amount: number, charge = 'ch_chain'): Draft<'OBSERVED'> =>
  drafts.observed({ objectType: 'dispute', objectId: id, eventType: 'charge.dispute.updated', status, disputeStatus: status, amount, charge, disputeReason: 'fraudulent' });

function failedAfterLanded(name: string, disputes: readonly Draft<'OBSERVED'>[]) {
  const verification = verify(chainReceipt(name, [drafts.proposed(), drafts.authorized(), drafts.dispatched(), committed, failed, ...disputes], key), { publicKeys });
  expect(verification.problems).toEqual([]);
  const alert = alertsFor(verification).find((draft) => draft.kind === 'failed_after_landed');
  if (alert === undefined) throw new Error('the failed refund raised no failed_after_landed alert');
  return alert;
}

describe('failed_after_landed: the money at stake is what is still owed', () => {
  it('counts nothing once a lost chargeback returned the whole refund', () => {
    const alert = failedAfterLanded('at-stake-covered', [dispute('du_lost', 'lost', 10_000)]);
    expect(alert.action).toMatch(/already got the money back/);
    expect(alert.centsAtStake).toBe(0);
  });

  it('counts what a partial lost chargeback left owed ($20 refund, $5 lost: $15)', () => {
    const alert = failedAfterLanded('at-stake-partial', [dispute('du_lost', 'lost', 500)]);
    expect(alert.action).toMatch(/\$15\.00 is still owed/);
    expect(alert.centsAtStake).toBe(1_500);
  });

  it('counts the whole refund while no lost chargeback on its charge returned any of it', () => {
    expect(failedAfterLanded('at-stake-open', [dispute('du_open', 'needs_response', 10_000)]).centsAtStake).toBe(2_000);
    expect(failedAfterLanded('at-stake-won', [dispute('du_won', 'won', 10_000)]).centsAtStake).toBe(2_000);
    expect(failedAfterLanded('at-stake-other-charge', [dispute('du_other', 'lost', 10_000, 'ch_other')]).centsAtStake).toBe(2_000);
  });

  it('carries each dispute\'s status beside it, for telling a dispute decided after a person resolved the alert', () => {
    const alert = failedAfterLanded('at-stake-statuses', [dispute('du_a', 'lost', 500), dispute('du_b', 'under_review', 1_500)]);
    expect(alert.disputes).toEqual(['du_a', 'du_b']);
    expect(alert.disputeStatuses).toEqual(['lost', 'under_review']);
  });
});
