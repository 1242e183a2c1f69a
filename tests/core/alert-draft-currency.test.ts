// Rule: an alert records the currency of the money it is about (lowercase ISO code), beside its amount at stake: a
// refund's is its commit result's, a credit's its own. Null where nothing recorded says it, and the amount then reads
// in dollars, as it always did. Where it is shown (`interlock alerts`, the page, the inbox) is
// tests/ops/ui-alert-currency.test.ts and tests/cli/alerts-currency.test.ts.
import { describe, expect, it } from 'vitest';
import { alertsFor, sendUnanswered } from '../../src/core/alert-rules.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { eurExposure, eurFailedRefund, jpyCreditMismatch } from './currency-alerts.js';
import { chainReceipt, drafts } from './entry-chain.js';

const { key, publicKeys } = testKey();

describe('the currency an alert records', () => {
  it('is the refund commit result\'s for an exposure and a refund that failed after it landed', () => {
    expect(eurExposure()).toMatchObject({ kind: 'exposure', currency: 'eur', centsAtStake: 12_000 });
    expect(eurFailedRefund()).toMatchObject({ kind: 'failed_after_landed', currency: 'eur', centsAtStake: 2_000 });
  });

  it('is the credit\'s own for a credit that landed in a currency the customer is not billed in', () => {
    expect(jpyCreditMismatch()).toMatchObject({ kind: 'failed_after_landed', currency: 'jpy', centsAtStake: 1_000 });
  });

  it('is null where nothing recorded says it (a commit result without one)', () => {
    const chargeback = drafts.observed({ objectType: 'dispute', objectId: 'du_cur', status: 'needs_response', disputeStatus: 'needs_response', amount: 10_000, charge: 'ch_chain' });
    const verification = verify(JSON.parse(JSON.stringify(chainReceipt('no-currency-draft', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_cur'), chargeback], key))), { publicKeys });
    expect(alertsFor(verification).find((alert) => alert.kind === 'exposure')?.currency).toBeNull();
  });

  it('is the one the caller gives for a send Stripe gives no answer to, and null when it gives none', () => {
    const base = { kind: 'credit' as const, subject: 'customer:cus_cur', cents: 1_000, forMs: 600_000, lastAnswer: null, windowEndsAt: 0, now: 0 };
    expect(sendUnanswered({ ...base, currency: 'jpy' }).currency).toBe('jpy');
    expect(sendUnanswered(base).currency).toBeNull();
  });
});
