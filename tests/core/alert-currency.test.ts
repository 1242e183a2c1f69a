// Rule: an alert states an amount in the currency the money moved in, through one helper (src/core/money-text.ts)
// that knows Stripe's zero-decimal currencies: "$20.00" for usd, "20.00 EUR", "1000 JPY" (Stripe's amount 1000 in jpy
// is ¥1,000, not 10.00). A refund's currency is its commit result's, a credit's its own. An amount whose currency
// nothing recorded says (facts from before they did) is never called dollars: "2000 (minor units, currency unknown)".
import { describe, expect, it } from 'vitest';
import { alertsFor } from '../../src/core/alert-rules.js';
import { effectIdFor } from '../../src/core/effect-id.js';
import type { Draft, EntryFields } from '../../src/core/entries.js';
import { moneyText } from '../../src/core/money-text.js';
import { buildReceipt } from '../../src/core/receipt.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { chainReceipt, checks, drafts, refundObject, sealChain, snapshot, T0 } from './entry-chain.js';

const { key, publicKeys } = testKey();

function creditReceipt(name: string, currency: string, amount: number, facts: readonly Draft<'OBSERVED'>[]) {
  const credit = { kind: 'credit', customer: 'cus_cur', amount, incident: 'INC-cur' };
  const premises = { subscription_status: null, incident_compensation: 0 };
  const approval = snapshot({ scope: 'customer:cus_cur', capCents: 1_000_000 });
  const sent = [
    { ...drafts.proposed(), effect: credit, premises },
    drafts.authorized(approval),
    { ...drafts.dispatched(), effect: credit, premises, checks: checks({ approval }) },
    { kind: 'COMMITTED', via: 'send', result: { id: 'cbtxn_own', object: 'customer_balance_transaction', amount: -amount, currency, customer: 'cus_cur', type: 'adjustment', created: 1 }, found: 'cbtxn_own', rechecked: null, epoch: 1 } as const,
  ];
  const effectId = effectIdFor({ requestId: name, effect: credit });
  const result = verify(JSON.parse(JSON.stringify(buildReceipt(effectId, sealChain(effectId, [...sent, ...facts], key), key, T0 + 60_000))), { publicKeys });
  expect(result.problems).toEqual([]);
  return result;
}
const balance = (id: string, amount: number, more: Partial<EntryFields['OBSERVED']> = {}) => drafts.observed({ objectType: 'customer_balance_transaction', objectId: id, eventType: 'customer.updated', status: 'credited', amount, charge: null, ...more });
const note = (amount: number) => drafts.observed({ objectType: 'credit_note', objectId: 'cn_billing', eventType: 'credit_note.created', status: 'issued', amount, charge: null, incident: 'INC-cur', currency: 'eur' });
const chargeback = (status = 'needs_response') => drafts.observed({ objectType: 'dispute', objectId: 'du_cur', eventType: 'charge.dispute.created', status, disputeStatus: status, amount: 10_000, charge: 'ch_chain' });

function refundReceipt(name: string, result: Record<string, string | number>, facts: readonly Draft<'OBSERVED'>[]) {
  const verification = verify(JSON.parse(JSON.stringify(chainReceipt(name, [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_cur', { result: refundObject('re_cur', result) }), ...facts], key))), { publicKeys });
  expect(verification.problems).toEqual([]);
  return verification;
}

describe('money text', () => {
  it('writes dollars for usd only, two decimals with the code for others, whole units for zero-decimal ones, and no currency as unknown', () => {
    expect(moneyText(2_000, 'usd')).toBe('$20.00');
    expect(moneyText(2_000, null)).toBe('2000 (minor units, currency unknown)');
    expect(moneyText(2_000, 'eur')).toBe('20.00 EUR');
    expect(moneyText(2_000, 'EUR')).toBe('20.00 EUR');
    for (const code of ['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf']) expect(moneyText(1_000, code)).toBe(`1000 ${code.toUpperCase()}`);
  });

  it('writes thousandths for Stripe\'s three-decimal currencies (5.124 KWD is amount 5124)', () => {
    for (const code of ['bhd', 'jod', 'kwd', 'omr', 'tnd']) expect(moneyText(5_120, code)).toBe(`5.120 ${code.toUpperCase()}`);
  });
});

describe('alert amounts and currencies', () => {
  it('a compensated_twice alert on a EUR credit does not call it dollars', () => {
    const result = creditReceipt('eur-twice', 'eur', 1_000, [balance('cbtxn_own', -1_000, { currency: 'eur', customerCurrency: 'eur' }), note(800)]);
    const alert = alertsFor(result).find((draft) => draft.kind === 'compensated_twice');
    expect(alert?.sentence).not.toContain('$');
    expect(alert?.sentence).toContain("this effect's 10.00 EUR balance credit landed and billing's credit note cn_billing (8.00 EUR) covers it too");
  });

  it('a currency_mismatch alert on a JPY credit of 1000 says 1000 JPY, not 10.00 JPY', () => {
    const result = creditReceipt('jpy-mismatch', 'jpy', 1_000, [balance('cbtxn_own', -1_000, { currency: 'jpy', customerCurrency: 'usd' })]);
    const alert = alertsFor(result).find((draft) => draft.kind === 'failed_after_landed');
    expect(alert?.sentence).toContain('Balance credit cbtxn_own (1000 JPY) landed in jpy');
    expect(alert?.action).toContain('a debit of 1000 JPY');
  });

  it('an exposure alert on a EUR refund states euros, and one on a JPY refund whole yen', () => {
    const eur = alertsFor(refundReceipt('eur-exposure', { currency: 'eur' }, [chargeback()])).find((draft) => draft.kind === 'exposure');
    expect(eur?.sentence).not.toContain('$');
    expect(eur?.sentence).toContain('The 20.00 EUR refund re_cur and the 100.00 EUR chargeback du_cur');
    const jpy = alertsFor(refundReceipt('jpy-exposure', { currency: 'jpy' }, [chargeback('lost')])).find((draft) => draft.kind === 'exposure');
    expect(jpy?.sentence).toContain('The 2000 JPY refund re_cur and the 10000 JPY chargeback du_cur');
    expect(jpy?.action).toContain('Ask the customer to return the 2000 JPY refund');
  });

  it('a failed_after_landed action on a EUR refund states euros', () => {
    const failed = drafts.observed({ objectType: 'refund', objectId: 're_cur', status: 'failed', failureReason: 'expired_or_canceled_card', amount: 2_000 });
    const alert = alertsFor(refundReceipt('eur-failed', { currency: 'eur' }, [chargeback('lost'), failed])).find((draft) => draft.kind === 'failed_after_landed');
    expect(alert?.action).toBe('The customer already got the money back through the lost chargeback du_cur. Tell the customer; do not refund again.');
    const partly = drafts.observed({ objectType: 'dispute', objectId: 'du_cur', status: 'lost', disputeStatus: 'lost', amount: 500, charge: 'ch_chain' });
    const owed = alertsFor(refundReceipt('eur-owed', { currency: 'eur' }, [partly, failed])).find((draft) => draft.kind === 'failed_after_landed');
    expect(owed?.action).toContain('gave the customer back 5.00 EUR of the 20.00 EUR refund: 15.00 EUR is still owed');
  });

  it('calls no amount dollars where nothing recorded says the currency', () => {
    const alert = alertsFor(refundReceipt('no-currency', {}, [chargeback()])).find((draft) => draft.kind === 'exposure');
    expect(alert?.sentence).not.toContain('$');
    expect(alert?.sentence).toContain('The 2000 (minor units, currency unknown) refund re_cur and the 10000 (minor units, currency unknown) chargeback du_cur');
  });
});
