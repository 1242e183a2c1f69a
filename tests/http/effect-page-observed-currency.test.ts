// Rule: the effect page writes each amount Stripe recorded in that amount's own currency, never another. An OBSERVED
// balance transaction that records its currency (a debit labelled with the effect may be in another one, and is then
// not counted) reads in it: a 1000 eur debit on a usd credit's page is "10.00 EUR", not "$10.00". A fact that names no
// currency and need not share the effect's (a credit note, another party's balance credit) reads as of a currency
// unknown; the effect's own facts (its refund, the payment's dispute) read in the effect's currency. A balance
// transaction reads as the credit or debit it is, never as a negative sum: Stripe's -500 on a usd credit is "credit of
// $5.00" (not "$-5.00"), a positive one "debit of …" (a jpy credit is "credit of 500 JPY").
import { describe, expect, it } from 'vitest';
import type { Entry } from '../../src/interlock.js';
import { summaryOf } from '../../webhooks/api/effect-view.js';
import { effectPage } from '../../webhooks/ui/pages.js';

const id = 'a'.repeat(64);
const base = { v: 2, effectId: id, prev: null, hash: 'h', kid: 'k' };
const observed = (at: number, fields: Record<string, unknown>) => ({ ...base, at, kind: 'OBSERVED', source: 'webhook', eventId: `evt_${at}`, eventType: 'customer.updated', status: null, failureReason: null, charge: null, disputeStatus: null, disputeReason: null, created: at, ...fields });

/** The "What Stripe says" lines of the effect page of `entries`, in order. */
function said(entries: Entry[]): string[] {
  const summary = summaryOf(id, 'customer:cus_1', entries, null);
  const page = effectPage({
    viewer: { name: 'op', role: 'operator', csrf: 'x', sections: [] },
    summary,
    detail: { journal: [], final_money: { status: 'returned' }, exposure: null, answer: null, answer_from: null, answer_matches_final_money: null, receipt_valid: null },
    receipt: { entries, signatures: [], verification: { valid: null, entries: entries.length, chainIntact: true, happened: true, happenedOnce: true, problems: [] } as never },
    links: { kind: 'dashboard', mode: 'test' },
    canDownload: false,
  }).text;
  return [...page.matchAll(/What Stripe says<\/dt><dd>([^<]*)<\/dd>/g)].map((match) => match[1] ?? '');
}

describe('the effect page of a usd credit', () => {
  const entries = [
    { ...base, at: 1_000, kind: 'PROPOSED', agent: 'bot', approval: 'ap_1', premises: { subscription_status: 'active', incident_compensation: 0, currency: 'usd' }, effect: { kind: 'credit', customer: 'cus_1', amount: 5_000, incident: 'INC-1' }, request: null, decision: null },
    { ...base, at: 2_000, kind: 'COMMITTED', via: 'send', result: { id: 'cbtxn_own', object: 'customer_balance_transaction', amount: -5_000, currency: 'usd' }, found: null, rechecked: null, epoch: 1 },
    observed(3_000, { objectType: 'customer_balance_transaction', objectId: 'cbtxn_debit', amount: 1_000, currency: 'eur' }),
    observed(4_000, { objectType: 'credit_note', objectId: 'cn_1', amount: 700, incident: 'INC-1' }),
    observed(5_000, { objectType: 'customer_balance_transaction', objectId: 'cbtxn_other', amount: -300, incident: 'INC-1' }),
    observed(6_000, { objectType: 'customer_balance_transaction', objectId: 'cbtxn_own', status: 'credited', amount: -5_000 }),
  ] as unknown as Entry[];

  it('writes a eur debit labelled with it in eur, not dollars', () => {
    expect(said(entries)[0]).toContain('10.00 EUR');
  });

  it('writes a credit note and another party\'s credit as of a currency unknown, and its own credit in usd', () => {
    const lines = said(entries);
    expect(lines[1]).toContain('700 (minor units, currency unknown)');
    expect(lines[2]).toContain('credit of 300 (minor units, currency unknown)');
    expect(lines[3]).toContain('credit of $50.00');
    for (const line of lines) expect(line).not.toMatch(/\$(10\.00|7\.00|-3\.00)/);
  });
});

/** A credit of `amount` in `currency` sent, with `facts` after its send (balance transactions credited unless they say). */
function creditWith(currency: string, amount: number, facts: Record<string, unknown>[]): Entry[] {
  return [
    { ...base, at: 1_000, kind: 'PROPOSED', agent: 'bot', approval: 'ap_1', premises: { subscription_status: 'active', incident_compensation: 0, currency }, effect: { kind: 'credit', customer: 'cus_1', amount, incident: 'INC-1' }, request: null, decision: null },
    { ...base, at: 2_000, kind: 'COMMITTED', via: 'send', result: { id: 'cbtxn_own', object: 'customer_balance_transaction', amount: -amount, currency }, found: null, rechecked: null, epoch: 1 },
    ...facts.map((fact, index) => observed(3_000 + index, { status: 'credited', ...fact })),
  ] as unknown as Entry[];
}

describe('the effect page of a balance credit', () => {
  it('writes a $5.00 credit (Stripe\'s -500) as "credit of $5.00", never "$-5.00" or "-$5.00"', () => {
    const [line] = said(creditWith('usd', 500, [{ objectType: 'customer_balance_transaction', objectId: 'cbtxn_own', amount: -500, currency: 'usd' }]));
    expect(line).toBe('customer_balance_transaction credited, credit of $5.00');
  });

  it('writes a jpy credit in whole yen, and a debit taking it back as a debit', () => {
    const lines = said(creditWith('jpy', 500, [
      { objectType: 'customer_balance_transaction', objectId: 'cbtxn_own', amount: -500, currency: 'jpy' },
      { objectType: 'customer_balance_transaction', objectId: 'cbtxn_back', amount: 200, currency: 'jpy', status: null },
    ]));
    expect(lines[0]).toContain('credit of 500 JPY');
    expect(lines[1]).toContain('debit of 200 JPY');
    for (const line of lines) expect(line).not.toMatch(/-\$|\$-|-\d/);
  });
});
