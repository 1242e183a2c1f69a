// Rule: a refund and a chargeback on one charge return money twice only where they overlap: exposure is what the
// refunds on the charge and its chargebacks return beyond the charge (at most this refund), read from the charge the
// dispute fact was recorded with. A chargeback of only the part no refund returned is no exposure and raises no alert;
// the alert's amount at stake is the overlap. A dispute fact recorded before facts carried the charge counts the whole
// chargeback, as receipts signed then read. The alert's action follows where the chargeback stands: answer one that
// needs a response, wait on one under review, and after a loss ask the customer to return the money or write it off.
import { describe, expect, it } from 'vitest';
import { alertsFor } from '../../src/core/alert-rules.js';
import type { Draft } from '../../src/core/entries.js';
import { quickShape, receiptSchema } from '../../src/core/receipt-schema.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { chainReceipt, drafts, refundObject } from './entry-chain.js';

const { key, publicKeys } = testKey();
const REFUND = 're_overlap';

/** A chargeback of `amount` on ch_chain, read with a charge of `charge` cents of which `refunded` were refunded (none: an old fact). */
const chargeback = (status: string, amount: number, read?: { charge: number; refunded: number }, id = 'du_overlap') =>
  drafts.observed({
    objectType: 'dispute', objectId: id, eventType: 'charge.dispute.updated', status, disputeStatus: status, amount, disputeReason: 'fraudulent',
    ...(read === undefined ? {} : { chargeAmount: read.charge, chargeRefunded: read.refunded }),
  });

/** A committed 2000-cent usd refund on ch_chain (its result names its currency, as Stripe's does) followed by these facts. */
function after(facts: readonly Draft<'OBSERVED'>[], name = 'overlap', currency = 'usd') {
  const committed = drafts.committed(REFUND, { result: refundObject(REFUND, { currency }) });
  const result = verify(JSON.parse(JSON.stringify(chainReceipt(name, [drafts.proposed(), drafts.authorized(), drafts.dispatched(), committed, ...facts], key))), { publicKeys });
  expect(result.problems).toEqual([]);
  return { result, alert: alertsFor(result).find((draft) => draft.kind === 'exposure') };
}

describe("the exposure's sentence states amounts in the refund's own money", () => {
  it('usd in dollars, jpy in yen: never "cents", which understates yen a hundredfold', () => {
    const facts = [chargeback('needs_response', 10_000, { charge: 10_000, refunded: 2_000 })];
    expect(after(facts, 'overlap-usd').result.exposure?.sentence).toBe(`Refund ${REFUND} ($20.00) went out and the charge was then charged back ($100.00): on a charge of $100.00 of which $20.00 was refunded, $20.00 of this refund was returned twice unless the dispute is won.`);
    expect(after(facts, 'overlap-jpy', 'jpy').result.exposure?.sentence).toBe(`Refund ${REFUND} (2000 JPY) went out and the charge was then charged back (10000 JPY): on a charge of 10000 JPY of which 2000 JPY was refunded, 2000 JPY of this refund was returned twice unless the dispute is won.`);
  });
});

describe('exposure is the overlap of the refunds and the chargebacks on the charge', () => {
  it('a chargeback of only the unrefunded part of a partly refunded charge is no exposure and raises no alert', () => {
    // 10000 charged, 2000 refunded, 8000 charged back: the customer got back exactly what it paid, once.
    const { result, alert } = after([chargeback('needs_response', 8_000, { charge: 10_000, refunded: 2_000 })]);
    expect(result.finalMoney.status).toBe('returned');
    expect(result.exposure).toBeNull();
    expect(alert).toBeUndefined();
  });

  it('a chargeback of the whole charge puts the refund at stake, not the refund plus the chargeback', () => {
    const { result, alert } = after([chargeback('needs_response', 10_000, { charge: 10_000, refunded: 2_000 })]);
    expect(result.exposure).toMatchObject({ cents: 2_000, refundCents: 2_000, chargebackCents: 10_000, chargeCents: 10_000, refundedCents: 2_000 });
    expect(alert?.centsAtStake).toBe(2_000);
    expect(alert?.sentence).toContain('on the $100.00 charge, of which $20.00 was refunded, $20.00 was returned twice');
  });

  it('a chargeback that overlaps part of the refund puts that part at stake', () => {
    expect(after([chargeback('lost', 9_000, { charge: 10_000, refunded: 2_000 })]).result.exposure?.cents).toBe(1_000);
  });

  it('counts at most this refund when other refunds on the charge make up the rest of the overlap', () => {
    // 3000 of others' refunds and this 2000: a whole-charge chargeback returns all 5000 twice, 2000 of it this refund.
    expect(after([chargeback('needs_response', 10_000, { charge: 10_000, refunded: 5_000 })]).result.exposure?.cents).toBe(2_000);
  });

  it('counts this refund as refunded on the charge even when the charge was read before it', () => {
    expect(after([chargeback('needs_response', 10_000, { charge: 10_000, refunded: 0 })]).result.exposure?.cents).toBe(2_000);
  });

  it('weighs two chargebacks on the charge together', () => {
    const read = { charge: 10_000, refunded: 2_000 };
    expect(after([chargeback('needs_response', 4_000, read), chargeback('needs_response', 4_000, read, 'du_second')]).result.exposure).toBeNull();
    expect(after([chargeback('needs_response', 5_000, read), chargeback('needs_response', 4_000, read, 'du_second')]).result.exposure).toMatchObject({ cents: 1_000, disputes: ['du_overlap', 'du_second'] });
  });

  it('the latest read of the charge stands: a refund made after the chargeback was recorded adds to the overlap', () => {
    const facts = [chargeback('needs_response', 8_000, { charge: 10_000, refunded: 2_000 }), chargeback('needs_response', 8_000, { charge: 10_000, refunded: 5_000 })];
    expect(after(facts).result.exposure?.cents).toBe(2_000);
  });

  it('reads a dispute fact recorded before facts carried the charge as before: the whole chargeback with the refund', () => {
    const { result, alert } = after([chargeback('needs_response', 8_000)]);
    expect(result.exposure).toMatchObject({ cents: 10_000, chargeCents: null, refundedCents: null });
    expect(alert?.centsAtStake).toBe(10_000);
    expect(alert?.sentence).toBe(`The $20.00 refund ${REFUND} and the $80.00 chargeback du_overlap both took money from the merchant: $100.00 at stake with this refund (another refund of the payment counts the chargeback too).`);
  });
});

describe("the exposure alert's action follows where the chargeback stands", () => {
  const read = { charge: 10_000, refunded: 2_000 };
  const action = (statuses: readonly string[]) => after(statuses.map((status) => chargeback(status, 10_000, read)), `action-${statuses.join('-')}`).alert?.action ?? '';

  it('asks for a reply with the refund as evidence while the chargeback needs a response', () => {
    expect(action(['needs_response'])).toBe(`Reply to dispute du_overlap with refund ${REFUND} as evidence (the customer was already refunded), or accept the loss.`);
    expect(action(['needs_response', 'lost', 'appeal_needs_response'])).toMatch(/^Reply to dispute du_overlap with refund/);
  });

  it('says to wait for the decision while it is under review, and what to do if it is lost', () => {
    const text = action(['needs_response', 'under_review']);
    expect(text).not.toMatch(/^Reply/);
    expect(text).toBe("Dispute du_overlap is under review: wait for the issuer's decision. If it is lost, the merchant paid both the refund and the chargeback: ask the customer to return $20.00, or write it off.");
  });

  it('after a loss, says the merchant paid both and asks the customer to return the money or write it off', () => {
    const text = action(['needs_response', 'under_review', 'lost']);
    expect(text).not.toMatch(/Reply to dispute/);
    expect(text).toBe('Dispute du_overlap was lost: the merchant paid both the refund and the chargeback. Ask the customer to return $20.00, or write it off.');
    // Read from a fact recorded before disputes carried their charge, what was returned twice is at most the refund.
    expect(after([chargeback('lost', 8_000)], 'action-old').alert?.action).toBe('Dispute du_overlap was lost: the merchant paid both the refund and the chargeback. Ask the customer to return the $20.00 refund, or write it off.');
  });

  it('names each chargeback under its own step when they stand apart', () => {
    const facts = [chargeback('lost', 5_000, read), chargeback('needs_response', 5_000, read, 'du_second')];
    const text = after(facts, 'action-two').alert?.action ?? '';
    expect(text).toMatch(/^Reply to dispute du_second with refund/);
    expect(text).toContain('Dispute du_overlap was lost');
  });
});

describe('the charge read with a dispute is part of the receipt\'s shape', () => {
  it('amounts that are not numbers are malformed, on both ways of reading a receipt', () => {
    const good = JSON.parse(JSON.stringify(chainReceipt('overlap-shape', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed(REFUND), chargeback('lost', 9_000, { charge: 10_000, refunded: 2_000 })], key))) as unknown;
    expect(quickShape(good)).not.toBeNull();
    expect(receiptSchema.safeParse(good).success).toBe(true);
    // Signed as the service would sign it: only its shape is wrong.
    const bad = JSON.parse(JSON.stringify(chainReceipt('overlap-shape-bad', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed(REFUND), chargeback('lost', 9_000, { charge: '10000' as unknown as number, refunded: 2_000 })], key))) as unknown;
    expect(quickShape(bad)).toBeNull();
    expect(receiptSchema.safeParse(bad).success).toBe(false);
    expect(verify(bad, { publicKeys })).toMatchObject({ valid: false, problems: [expect.stringMatching(/malformed at entries\.4\.chargeAmount/)] });
  });
});
