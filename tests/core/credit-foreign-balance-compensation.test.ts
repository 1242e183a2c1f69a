// Rule (core/final-money.ts deriveSecondCompensation, core/alert-rules.ts; as the credit target counts it before a send,
// stripe/credit-target.ts incidentCompensation): billing's balance credits tagged with the credit's incident in another
// currency than the credit's, netted per currency against billing's debits tagged with it in that currency (never below
// nothing), compensate the incident as a credit note in another currency does: the receipt's second compensation names
// them `elsewhere`, in their own currency, never converted nor weighed against the credit (what is left of the credit
// is at stake whole), and the compensated_twice alert is raised. A foreign debit takes nothing back of a credit in
// another currency: a tagged eur debit leaves billing's usd credit standing.
import { describe, expect, it } from 'vitest';
import { alertsFor } from '../../src/core/alert-rules.js';
import { effectIdFor } from '../../src/core/effect-id.js';
import type { Draft, EntryFields } from '../../src/core/entries.js';
import { buildReceipt } from '../../src/core/receipt.js';
import { quickShape, receiptSchema } from '../../src/core/receipt-schema.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { checks, drafts, sealChain, snapshot, T0 } from './entry-chain.js';

const { key, publicKeys } = testKey();
const credit = { kind: 'credit', customer: 'cus_abroad', amount: 1_000, incident: 'INC-abroad' };
const premises = { subscription_status: null, incident_compensation: 0 };
const approval = snapshot({ scope: 'customer:cus_abroad' });
const sent = [
  { ...drafts.proposed(), effect: credit, premises },
  drafts.authorized(approval),
  { ...drafts.dispatched(), effect: credit, premises, checks: checks({ approval }) },
  { kind: 'COMMITTED', via: 'send', result: { id: 'cbtxn_own', object: 'customer_balance_transaction', amount: -1_000, currency: 'usd', customer: 'cus_abroad', type: 'adjustment', created: 1 }, found: 'cbtxn_own', rechecked: null, epoch: 1 } as const,
];
const receiptOf = (name: string, facts: readonly Draft<'OBSERVED'>[]) => {
  const effectId = effectIdFor({ requestId: name, effect: credit });
  return buildReceipt(effectId, sealChain(effectId, [...sent, ...facts], key), key, T0 + 60_000);
};
const verified = (name: string, facts: readonly Draft<'OBSERVED'>[]) => {
  const receipt = JSON.parse(JSON.stringify(receiptOf(name, facts))) as unknown;
  expect(quickShape(receipt)).not.toBeNull();
  expect(receiptSchema.safeParse(receipt).success).toBe(true);
  const result = verify(receipt, { publicKeys });
  expect(result.problems).toEqual([]);
  expect(result.valid).toBe(true);
  return result;
};
const balance = (id: string, amount: number, more: Partial<EntryFields['OBSERVED']> = {}) => drafts.observed({ objectType: 'customer_balance_transaction', objectId: id, eventType: 'customer.updated', status: 'credited', amount, charge: null, ...more });
const own = balance('cbtxn_own', -1_000, { currency: 'usd', customerCurrency: 'usd' });
// As src/facts/apply.ts records billing's move in the credit's currency (none named) and in another (with its currency
// and the customer's).
const billing = (id: string, amount: number, incident: string | null = 'INC-abroad') => balance(id, amount, { incident });
const abroad = (id: string, amount: number, currency: string, incident: string | null = 'INC-abroad') => balance(id, amount, { incident, currency, customerCurrency: 'usd' });

describe("billing's balance credit for the incident in another currency than the credit's", () => {
  it('is a second compensation named in its own currency, the whole credit at stake, and raises compensated_twice', () => {
    const result = verified('yen', [own, abroad('cbtxn_yen', -700, 'jpy')]);
    expect(result.finalMoney.status).toBe('returned');
    expect(result.compensatedTwice).toMatchObject({ cents: 1_000, ownCents: 1_000, notesCents: 0, currency: 'usd', creditNotes: [], balanceCredits: ['cbtxn_yen'], elsewhere: [{ creditNote: 'cbtxn_yen', amount: 700, currency: 'jpy', kind: 'balance credit' }] });
    expect(result.compensatedTwice?.sentence).toContain('balance credit cbtxn_yen (700 JPY)');
    const alert = alertsFor(result).find((draft) => draft.kind === 'compensated_twice');
    expect(alert).toMatchObject({ centsAtStake: 1_000, currency: 'usd', compensations: ['cbtxn_yen'] });
    expect(alert?.sentence).toContain("billing's balance credit cbtxn_yen (700 JPY)");
    expect(alert?.sentence).not.toContain('$7.00');
    expect(alert?.action).toContain("billing's credit cbtxn_yen in the currency it is in");
    expect(alert?.action).toContain('`amount=1000`, `currency=usd`');
  });

  it("is netted in its currency against billing's debits tagged with the incident there, never below nothing", () => {
    expect(verified('yen-taken-back', [own, abroad('cbtxn_yen', -700, 'jpy'), abroad('cbtxn_yen_back', 700, 'jpy')]).compensatedTwice).toBeNull();
    expect(verified('yen-over', [own, abroad('cbtxn_yen', -700, 'jpy'), abroad('cbtxn_yen_back', 900, 'jpy')]).compensatedTwice).toBeNull();
    expect(verified('yen-partly', [own, abroad('cbtxn_yen', -700, 'jpy'), abroad('cbtxn_yen_back', 300, 'jpy')]).compensatedTwice).toMatchObject({ cents: 1_000, balanceCredits: ['cbtxn_yen'], elsewhere: [{ creditNote: 'cbtxn_yen', amount: 400, currency: 'jpy', kind: 'balance credit' }] });
    // A jpy debit more than billing's jpy credit takes nothing of billing's usd credit: each currency on its own.
    expect(verified('yen-debit-usd-credit', [own, billing('cbtxn_usd', -300), abroad('cbtxn_yen_back', 5_000, 'jpy')]).compensatedTwice).toMatchObject({ cents: 300, notesCents: 300, balanceCredits: ['cbtxn_usd'], elsewhere: [] });
  });

  it('beside billing\'s credit in the credit\'s currency: both named, each in its own, and what is left of the credit at stake whole', () => {
    const result = verified('both', [own, balance('cbtxn_debit', 400, { currency: 'usd' }), billing('cbtxn_usd', -300), abroad('cbtxn_yen', -700, 'jpy'), abroad('cbtxn_eur', -200, 'eur')]);
    expect(result.compensatedTwice).toMatchObject({ cents: 600, reversedCents: 400, notesCents: 300, balanceCredits: ['cbtxn_usd', 'cbtxn_yen', 'cbtxn_eur'] });
    expect(result.compensatedTwice?.sentence).toContain('($3.00 and 700 JPY and 2.00 EUR)');
    expect(alertsFor(result).find((draft) => draft.kind === 'compensated_twice')).toMatchObject({ centsAtStake: 600 });
  });

  it('re-tagged to another incident compensates this one no more', () => {
    expect(verified('yen-retagged', [own, abroad('cbtxn_yen', -700, 'jpy'), abroad('cbtxn_yen', -700, 'jpy', 'INC-other')]).compensatedTwice).toBeNull();
  });
});

describe('a debit tagged with the incident in another currency, recorded with its currency', () => {
  it("takes nothing back of billing's credit in the credit's currency, nor of the credit itself", () => {
    const result = verified('eur-debit', [own, billing('cbtxn_usd', -700), abroad('cbtxn_eur_back', 700, 'eur')]);
    expect(result.finalMoney.status).toBe('returned');
    expect(result.compensatedTwice).toMatchObject({ cents: 700, notesCents: 700, balanceCredits: ['cbtxn_usd'], elsewhere: [] });
    expect(verified('eur-debit-alone', [own, abroad('cbtxn_eur_back', 700, 'eur')])).toMatchObject({ finalMoney: { status: 'returned' }, compensatedTwice: null });
  });
});
