// Rule: a chargeback returns money twice once, however many refunds its charge holds: the exposures of the receipts on
// one payment add up to at most what the refunds and the chargebacks returned beyond the charge (the payment's overlap),
// never more. The refunds on the charge share the overlap the newest first (the charge could return what it held less
// the chargeback; the refunds made first fit in that, the newest went past it), by Stripe's `created` and then by id,
// each receipt working its share out from the charge's refunds as it read them with the chargeback (facts of
// objectType `charge`); refunds the gate did not make take their share too, so no gated receipt claims it. Each
// exposure names the payment's overlap beside its share (`paymentTwiceCents`), and its alert says both. A charge with
// one refund, and a chargeback of the whole charge (every refund returned twice whole), read as before.
import { describe, expect, it } from 'vitest';
import { alertsFor } from '../../src/core/alert-rules.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { chainReceipt, drafts, refundObject } from './entry-chain.js';

const { key, publicKeys } = testKey();

type OnCharge = { id: string; amount: number; created: number; status?: string };

/** The charge's refunds as the facts worker lists them with its chargeback (one `charge` fact each). */
const listed = (refunds: readonly OnCharge[]) =>
  refunds.map((refund) => drafts.observed({ objectType: 'charge', objectId: refund.id, eventType: 'charge.reread', status: refund.status ?? 'succeeded', amount: refund.amount, created: refund.created }));

/** A chargeback of `amount` on ch_chain read with a 10000 charge of which `refunded` was refunded. */
const chargeback = (amount: number, refunded: number) =>
  drafts.observed({ objectType: 'dispute', objectId: 'du_shared', eventType: 'charge.dispute.created', status: 'needs_response', disputeStatus: 'needs_response', amount, disputeReason: 'fraudulent', chargeAmount: 10_000, chargeRefunded: refunded });

/** The receipt of the gated 2000 refund `refund`, with the charge's refunds listed (none: a charge with one refund) and the chargeback. */
function receiptOf(refund: string, onCharge: readonly OnCharge[], chargebackCents: number, refunded: number) {
  const list = [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed(refund, { result: refundObject(refund, { currency: 'usd' }) }), ...listed(onCharge), chargeback(chargebackCents, refunded)];
  const result = verify(JSON.parse(JSON.stringify(chainReceipt(`shared-${refund}-${chargebackCents}-${onCharge.length}-${refunded}`, list, key))), { publicKeys });
  expect(result.problems).toEqual([]);
  return { exposure: result.exposure, alert: alertsFor(result).find((draft) => draft.kind === 'exposure') };
}

const OLD = { id: 're_a_old', amount: 2_000, created: 100 };
const NEW = { id: 're_b_new', amount: 2_000, created: 200 };
const TWO = [OLD, NEW];

describe("a partial chargeback on a charge with two gated refunds is counted once across their receipts", () => {
  it('the overlap lies on the newest refund first: 1000 returned twice is 1000 at stake in all, not 1000 on each', () => {
    // 10000 charged, 4000 refunded, 7000 charged back: 1000 returned twice.
    const older = receiptOf(OLD.id, TWO, 7_000, 4_000);
    const newer = receiptOf(NEW.id, TWO, 7_000, 4_000);
    expect(older.exposure).toBeNull();
    expect(older.alert).toBeUndefined();
    expect(newer.exposure).toMatchObject({ cents: 1_000, paymentTwiceCents: 1_000, newerCents: 0, refundCents: 2_000, chargeCents: 10_000, refundedCents: 4_000 });
    expect(newer.alert?.centsAtStake).toBe(1_000);
  });

  it('an overlap beyond the newest refund goes on to the one before it, and each receipt names the whole beside its share', () => {
    // 9000 charged back: 3000 returned twice, 2000 with the newest refund and 1000 with the one before it.
    const older = receiptOf(OLD.id, TWO, 9_000, 4_000);
    const newer = receiptOf(NEW.id, TWO, 9_000, 4_000);
    expect(older.exposure).toMatchObject({ cents: 1_000, paymentTwiceCents: 3_000, newerCents: 2_000 });
    expect(newer.exposure).toMatchObject({ cents: 2_000, paymentTwiceCents: 3_000, newerCents: 0 });
    expect((older.alert?.centsAtStake ?? 0) + (newer.alert?.centsAtStake ?? 0)).toBe(3_000);
    expect(older.exposure?.sentence).toBe(`Refund ${OLD.id} ($20.00) went out and the charge was then charged back ($90.00): on a charge of $100.00 of which $40.00 was refunded, $30.00 was returned twice in all and $10.00 of it with this refund (the refunds on the charge share it, the newest first) unless the dispute is won.`);
    expect(older.alert?.sentence).toBe(`The $20.00 refund ${OLD.id} and the $90.00 chargeback du_shared both took money from the merchant: on the $100.00 charge, of which $40.00 was refunded, $30.00 was returned twice in all, $10.00 of it, at stake with this refund (the refunds on the charge share what was returned twice, the newest first: no other refund's receipt counts this part).`);
  });

  it('a chargeback of the whole charge still puts each refund at stake whole', () => {
    const older = receiptOf(OLD.id, TWO, 10_000, 4_000);
    const newer = receiptOf(NEW.id, TWO, 10_000, 4_000);
    expect(older.exposure).toMatchObject({ cents: 2_000, paymentTwiceCents: 4_000 });
    expect(newer.exposure).toMatchObject({ cents: 2_000, paymentTwiceCents: 4_000 });
  });

  it('a refund made by hand takes its share: the gated receipts never claim it', () => {
    // A 3000 refund made in the Dashboard after both: 7000 refunded, 8000 charged back, 5000 returned twice: 3000 of
    // it the hand-made refund's (no receipt), 2000 the newer gated refund's, none the older one's.
    const withHand = [...TWO, { id: 're_hand', amount: 3_000, created: 300 }];
    const older = receiptOf(OLD.id, withHand, 8_000, 7_000);
    const newer = receiptOf(NEW.id, withHand, 8_000, 7_000);
    expect(older.exposure).toBeNull();
    expect(newer.exposure).toMatchObject({ cents: 2_000, paymentTwiceCents: 5_000, newerCents: 3_000 });
    expect(newer.alert?.centsAtStake).toBe(2_000);
  });

  it('a refund on the charge that failed takes no share', () => {
    // The hand-made refund failed: 4000 refunded, 7000 charged back, 1000 returned twice, the newer gated refund's.
    const withFailed = [...TWO, { id: 're_hand', amount: 3_000, created: 300, status: 'failed' }];
    expect(receiptOf(NEW.id, withFailed, 7_000, 4_000).exposure).toMatchObject({ cents: 1_000, newerCents: 0 });
    expect(receiptOf(OLD.id, withFailed, 7_000, 4_000).exposure).toBeNull();
  });

  it('refunds made in the same second are ordered by id, alike on every receipt', () => {
    const same = [{ ...OLD, created: 100 }, { ...NEW, created: 100 }];
    const shares = [receiptOf(OLD.id, same, 7_000, 4_000).exposure?.cents ?? 0, receiptOf(NEW.id, same, 7_000, 4_000).exposure?.cents ?? 0];
    expect(shares).toEqual([0, 1_000]);
  });

  it('a refund the list does not hold (made after the chargeback was read) is the newest', () => {
    expect(receiptOf(NEW.id, [OLD, { id: 're_other', amount: 2_000, created: 50 }], 7_000, 4_000).exposure).toMatchObject({ cents: 1_000, newerCents: 0 });
  });

  it('a charge with one refund reads as before: no list, the overlap up to the refund', () => {
    const alone = receiptOf(NEW.id, [], 9_000, 2_000);
    expect(alone.exposure).toMatchObject({ cents: 1_000, paymentTwiceCents: 1_000, newerCents: null });
    expect(alone.alert?.sentence).toContain('on the $100.00 charge, of which $20.00 was refunded, $10.00 was returned twice, at stake with this refund (another refund of the payment may count the chargeback too)');
  });
});
