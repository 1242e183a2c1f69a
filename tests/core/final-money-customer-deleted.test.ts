// Rule (core/final-money.ts wipedByDeletion): a landed credit whose customer was deleted while the balance still held at
// least what is left of it (its amount less what labelled debits took back) as credit, in its currency, reached no
// invoice: `not_returned` (`customer_deleted`), and no second compensation. So did one in another currency than the
// customer's balance. A balance holding less than that (part of it, nothing, a debt) reads as the credit used: the
// final money stays `returned`. A refund's final money takes no customer deletion into account.
import { describe, expect, it } from 'vitest';
import { CUSTOMER_DELETED, collectMoneyFacts, deriveFinalMoney, deriveSecondCompensation, type MoneyFacts } from '../../src/core/final-money.js';

function facts(balance: number | null, options: { currency?: string; deletedIn?: string | null; reversed?: number } = {}): MoneyFacts {
  const money = collectMoneyFacts([]);
  const credit = 'cbtxn_own';
  money.credits.add(credit);
  money.currencies.set(credit, { currency: options.currency ?? 'usd', customerCurrency: 'usd' });
  if (options.reversed !== undefined) money.reversals.set('cbtxn_debit', { cents: options.reversed, currency: 'usd' });
  money.deletion = { credit, balance, currency: options.deletedIn === undefined ? 'usd' : options.deletedIn };
  return money;
}

describe('final money of a credit whose customer was deleted', () => {
  it('reads not_returned when the balance at the deletion held the whole credit', () => {
    expect(deriveFinalMoney(facts(-1_000), true, 'credit', [], 1_000)).toMatchObject({ status: 'not_returned', failureReason: CUSTOMER_DELETED, customerDeleted: { credit: 'cbtxn_own', balance: -1_000, currency: 'usd' } });
    expect(deriveFinalMoney(facts(-2_500), true, 'credit', [], 1_000).status).toBe('not_returned');
  });

  it('weighs the balance against what labelled debits left of the credit', () => {
    expect(deriveFinalMoney(facts(-600, { reversed: 400 }), true, 'credit', [], 1_000)).toMatchObject({ status: 'not_returned', failureReason: CUSTOMER_DELETED });
    expect(deriveFinalMoney(facts(-500, { reversed: 400 }), true, 'credit', [], 1_000)).toMatchObject({ status: 'returned', failureReason: null });
  });

  it('stays returned when the balance held only part of the credit, none of it, or a debt', () => {
    for (const balance of [-400, 0, 300]) expect(deriveFinalMoney(facts(balance), true, 'credit', [], 1_000)).toMatchObject({ status: 'returned', failureReason: null });
    expect(deriveFinalMoney(facts(null), true, 'credit', [], 1_000).status).toBe('returned');
  });

  it('reads not_returned for a credit in another currency than the deleted customer\'s balance, whatever that balance', () => {
    expect(deriveFinalMoney(facts(0, { currency: 'eur' }), true, 'credit', [], 1_000)).toMatchObject({ status: 'not_returned', failureReason: CUSTOMER_DELETED });
    expect(deriveFinalMoney(facts(0, { deletedIn: 'gbp' }), true, 'credit', [], 1_000)).toMatchObject({ status: 'not_returned', failureReason: CUSTOMER_DELETED });
  });

  it('counts no second compensation for a credit the deletion wiped unused', () => {
    const wiped = facts(-1_000);
    wiped.creditNotes.set('cn_billing', { id: 'cn_billing', status: 'issued', amount: 700, incident: 'INC-1', currency: 'usd' });
    expect(deriveSecondCompensation(wiped, 'returned', 1_000, 'INC-1')).toBeNull();
    const used = facts(-400);
    used.creditNotes.set('cn_billing', { id: 'cn_billing', status: 'issued', amount: 700, incident: 'INC-1', currency: 'usd' });
    expect(deriveSecondCompensation(used, 'returned', 1_000, 'INC-1')).toMatchObject({ cents: 700 });
  });

  it('leaves a refund\'s final money alone', () => {
    const money = facts(-1_000);
    money.refunds.set('re_1', { id: 're_1', status: 'succeeded', amount: 1_000, failureReason: null, charge: 'ch_1' });
    expect(deriveFinalMoney(money, true, 'refund', ['re_1'], 1_000)).toMatchObject({ status: 'returned', failureReason: null });
  });

  it('reads a deletion fact recorded on the credit the send made, and on no other balance transaction', () => {
    const observed = (objectId: string) => ({ kind: 'OBSERVED', source: 'webhook', eventId: 'evt_1', eventType: 'customer.deleted', objectType: 'customer_balance_transaction', objectId, status: CUSTOMER_DELETED, failureReason: null, amount: -1_000, charge: null, disputeStatus: null, disputeReason: null, created: 1, customerCurrency: 'usd' });
    const committed = { kind: 'COMMITTED', via: 'send', result: { id: 'cbtxn_own', object: 'customer_balance_transaction', amount: -1_000, currency: 'usd' }, found: 'cbtxn_own', rechecked: null, epoch: 1 };
    const chain = (objectId: string) => [committed, observed(objectId)] as unknown as Parameters<typeof collectMoneyFacts>[0];
    expect(collectMoneyFacts(chain('cbtxn_own')).deletion).toEqual({ credit: 'cbtxn_own', balance: -1_000, currency: 'usd' });
    const other = collectMoneyFacts(chain('cbtxn_other'));
    expect(other.deletion).toBeUndefined();
    expect([...other.reversals.keys(), ...other.reCredits.keys(), ...other.otherCredits.keys()]).toEqual([]);
  });
});
