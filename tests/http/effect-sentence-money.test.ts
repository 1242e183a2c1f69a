// Rule (core/final-money.ts moneyAfterSend): an effect's sentence says what became of the money after a send Stripe
// accepted when it is not simply "it went back": GET /v1/effects/:id (detailOf), `interlock effect show` and a case's
// sentence say the same. The effect's own view said only "The effect was sent once and Stripe accepted it." of a refund
// Stripe failed afterwards, while the case view of the same effect said the money did not go back.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { moneyAfterSend, type FinalMoney } from '../../src/core/final-money.js';
import { publicKeySet } from '../../src/core/signing.js';
import { detailOf, summaryOf } from '../../webhooks/api/effect-view.js';

const dir = new URL('../fixtures/receipts/', import.meta.url);
const keys = publicKeySet([readFileSync(new URL('public-key.pem', dir), 'utf8')]);

function detailOfFixture(name: string) {
  const receipt = JSON.parse(readFileSync(new URL(name, dir), 'utf8'));
  return detailOf(summaryOf(receipt.effectId, 'payment:pi_fixture', receipt.entries, 'usd'), receipt.entries, receipt, keys);
}

describe("an effect's sentence", () => {
  it('of a refund Stripe failed after it landed says the money did not go back, and why', () => {
    const detail = detailOfFixture('failed-refund.json');
    expect(detail.final_money.status).toBe('not_returned');
    expect(detail.sentence).toBe('The effect was sent once and Stripe accepted it. Then Stripe failed the refund (charge_for_pending_refund_disputed): the money did not go back to the customer, and alert failed_after_landed says what to do.');
  });

  it('of a refund that went back is the outcome\'s alone', () => {
    expect(detailOfFixture('committed.json').sentence).toBe('The effect was sent once and Stripe accepted it.');
  });

  it('of an effect refused before any send says nothing of money that never moved', () => {
    const detail = detailOfFixture('refused-at-recovery.json');
    expect(detail.sentence).not.toContain('did not go back');
  });

  // Each naming an alert only where alert-rules.ts raises one: a credit taken back by a labelled debit raises none.
  it('of a credit that did not reach the customer speaks of the credit, as its final money reads', () => {
    const deletion = { credit: 'cbtxn_1', currency: 'usd', cents: 500 } as unknown as NonNullable<FinalMoney['customerDeleted']>;
    const unread = { credit: 'cbtxn_1', currency: 'usd', cents: 500, event: null } as unknown as NonNullable<FinalMoney['balanceUnread']>;
    expect(moneyAfterSend(true, 'credit', { status: 'not_returned', failureReason: 'customer_deleted', customerDeleted: deletion }, null)).toBe(' Then Stripe deleted the customer with the credit still unused, so it reaches no bill; alert failed_after_landed says what to do.');
    expect(moneyAfterSend(true, 'credit', { status: 'not_returned', failureReason: null }, null)).toBe(' Then a debit labelled with this effect took the credit back: the customer does not have it.');
    expect(moneyAfterSend(true, 'credit', { status: 'unknown', failureReason: 'balance_unread', balanceUnread: unread }, null)).toContain('Whether the credit reached the customer cannot be told');
    expect(moneyAfterSend(true, 'credit', { status: 'returned', failureReason: null }, null)).toBe('');
  });
});
