// Rule: an exposure's sentence says where the chargebacks it counts stand, as its alert does: while one is still open
// (awaiting a response, under review, under appeal) it says the money was returned twice "unless the dispute is won";
// once every one is lost it says the dispute was lost and the merchant paid both, never "unless the dispute is won"; a
// won chargeback is no exposure. The sentence is read from the receipt's entries, not signed: the receipt verifies.
import { describe, expect, it } from 'vitest';
import type { Draft } from '../../src/core/entries.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { chainReceipt, drafts, refundObject } from './entry-chain.js';

const { key, publicKeys } = testKey();
const REFUND = 're_lost';
const READ = { chargeAmount: 10_000, chargeRefunded: 2_000 };

/** A chargeback fact of `amount` eur cents on ch_chain, read with a 100.00 EUR charge of which 20.00 EUR was refunded (none: an old fact). */
const chargeback = (status: string, amount = 10_000, id = 'du_lost', read: object = READ) =>
  drafts.observed({ objectType: 'dispute', objectId: id, eventType: 'charge.dispute.updated', status, disputeStatus: status, amount, disputeReason: 'fraudulent', ...read });

/** The exposure of a committed 20.00 EUR refund on ch_chain followed by these facts, from a receipt that verifies. */
function exposureAfter(name: string, facts: readonly Draft<'OBSERVED'>[]) {
  const committed = drafts.committed(REFUND, { result: refundObject(REFUND, { currency: 'eur' }) });
  const result = verify(JSON.parse(JSON.stringify(chainReceipt(`lost-${name}`, [drafts.proposed(), drafts.authorized(), drafts.dispatched(), committed, ...facts], key))), { publicKeys });
  expect(result.problems).toEqual([]);
  expect(result.valid).toBe(true);
  return result.exposure;
}

describe("an exposure's sentence follows where its chargebacks stand", () => {
  it('a chargeback still open: returned twice unless the dispute is won', () => {
    for (const status of ['needs_response', 'under_review']) {
      expect(exposureAfter(status, [chargeback(status)])?.sentence).toBe(`Refund ${REFUND} (20.00 EUR) went out and the charge was then charged back (100.00 EUR): on a charge of 100.00 EUR of which 20.00 EUR was refunded, 20.00 EUR of this refund was returned twice unless the dispute is won.`);
    }
  });

  it('a chargeback closed as lost: the dispute was lost and the merchant paid both', () => {
    const exposure = exposureAfter('closed', [chargeback('needs_response'), chargeback('lost')]);
    expect(exposure?.statuses).toEqual(['lost']);
    expect(exposure?.sentence).toBe(`Refund ${REFUND} (20.00 EUR) went out and the charge was then charged back (100.00 EUR): on a charge of 100.00 EUR of which 20.00 EUR was refunded, 20.00 EUR of this refund was returned twice: the dispute du_lost was lost, so the merchant paid both.`);
  });

  it('a lost chargeback read before facts carried the charge says it was lost too', () => {
    expect(exposureAfter('old', [chargeback('lost', 8_000, 'du_lost', {})])?.sentence).toBe(`Refund ${REFUND} (20.00 EUR) went out and the charge was then charged back (80.00 EUR): the merchant paid both: the dispute du_lost was lost.`);
  });

  it('two chargebacks: unless won while one is open, lost once both are', () => {
    const open = exposureAfter('two-open', [chargeback('lost', 5_000), chargeback('needs_response', 5_000, 'du_second')]);
    expect(open?.sentence).toMatch(/unless the dispute is won\.$/);
    const both = exposureAfter('two-lost', [chargeback('lost', 5_000), chargeback('lost', 5_000, 'du_second')]);
    expect(both?.sentence).toMatch(/returned twice: the disputes du_lost, du_second were lost, so the merchant paid both\.$/);
  });

  it('a lost chargeback under appeal is open again: unless the dispute is won', () => {
    expect(exposureAfter('appeal', [chargeback('lost'), chargeback('appeal_needs_response')])?.sentence).toMatch(/unless the dispute is won\.$/);
  });

  it('a won chargeback is no exposure, as before', () => {
    expect(exposureAfter('won', [chargeback('under_review'), chargeback('won')])).toBeNull();
  });
});
