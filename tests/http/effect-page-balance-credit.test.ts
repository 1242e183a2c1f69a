// Rule: the effect page states a customer balance transaction as the credit or debit it is, never as a negative sum of
// money: Stripe's amount -500 on a usd credit reads "credit of $5.00" (not "$-5.00"), a positive one "debit of …",
// each in its own currency (a jpy credit is "credit of 500 JPY"). A refund's amount reads as it is.
import { describe, expect, it } from 'vitest';
import type { Entry } from '../../src/interlock.js';
import { summaryOf } from '../../webhooks/api/effect-view.js';
import { effectPage } from '../../webhooks/ui/pages.js';

const id = 'b'.repeat(64);
const base = { v: 2, effectId: id, prev: null, hash: 'h', kid: 'k' };
const observed = (at: number, fields: Record<string, unknown>) => ({ ...base, at, kind: 'OBSERVED', source: 'webhook', eventId: `evt_${at}`, eventType: 'customer.balance_transaction.created', status: 'credited', failureReason: null, charge: null, disputeStatus: null, disputeReason: null, created: at, ...fields });

/** The "What Stripe says" lines of the effect page of a credit of `amount` in `currency`, with `facts` after its send. */
function said(currency: string, amount: number, facts: Record<string, unknown>[]): string[] {
  const entries = [
    { ...base, at: 1_000, kind: 'PROPOSED', agent: 'bot', approval: 'ap_1', premises: { subscription_status: 'active', incident_compensation: 0, currency }, effect: { kind: 'credit', customer: 'cus_1', amount, incident: 'INC-1' }, request: null, decision: null },
    { ...base, at: 2_000, kind: 'COMMITTED', via: 'send', result: { id: 'cbtxn_own', object: 'customer_balance_transaction', amount: -amount, currency }, found: null, rechecked: null, epoch: 1 },
    ...facts.map((fact, index) => observed(3_000 + index, fact)),
  ] as unknown as Entry[];
  const page = effectPage({
    viewer: { name: 'op', role: 'operator', csrf: 'x', sections: [] },
    summary: summaryOf(id, 'customer:cus_1', entries, null),
    detail: { journal: [], final_money: { status: 'returned' }, exposure: null, answer: null, answer_from: null, answer_matches_final_money: null, receipt_valid: null },
    receipt: { entries, signatures: [], verification: { valid: null, entries: entries.length, chainIntact: true, happened: true, happenedOnce: true, problems: [] } as never },
    links: { kind: 'dashboard', mode: 'test' },
    canDownload: false,
  }).text;
  return [...page.matchAll(/What Stripe says<\/dt><dd>([^<]*)<\/dd>/g)].map((match) => match[1] ?? '');
}

describe('the effect page of a balance credit', () => {
  it('writes a $5.00 credit (Stripe\'s -500) as "credit of $5.00", never "$-5.00" or "-$5.00"', () => {
    const [line] = said('usd', 500, [{ objectType: 'customer_balance_transaction', objectId: 'cbtxn_own', amount: -500, currency: 'usd' }]);
    expect(line).toBe('customer_balance_transaction credited, credit of $5.00');
  });

  it('writes a jpy credit in whole yen, and a debit taking it back as a debit', () => {
    const lines = said('jpy', 500, [
      { objectType: 'customer_balance_transaction', objectId: 'cbtxn_own', amount: -500, currency: 'jpy' },
      { objectType: 'customer_balance_transaction', objectId: 'cbtxn_back', amount: 200, currency: 'jpy', status: null },
    ]);
    expect(lines[0]).toContain('credit of 500 JPY');
    expect(lines[1]).toContain('debit of 200 JPY');
    for (const line of lines) expect(line).not.toMatch(/-\$|\$-|-\d/);
  });
});
