// Rule (DESIGN §3 F, §5; core/final-money.ts, core/alert-rules.ts, core/receipt-schema.ts): a credit's final money
// agrees with the money at Stripe, from its receipt alone. A credit whose own balance transaction is in another
// currency than the one the customer is billed in sits in a balance the customer's invoices never use: not_returned,
// `currency_mismatch`, and an alert saying what to do. Debits labelled with the effect take its credit back up to the
// credit (a larger one counts as the whole of what is left; one in another currency as nothing); the part paid twice
// is what is left of the credit against billing's compensation, whose tagged balance credits count net of billing's
// tagged debits. The currency fields are optional on OBSERVED: receipts recorded before them verify and read as before.
// A credit labelled with the effect that its send did not make (a re-credit: Stripe cannot delete a balance transaction,
// so a mistaken take-back is undone by a new credit) is netted against the labelled debits, in any order, never below
// nothing and at most the credit; re-credits beyond the debits leave the credit standing (returned), counted once, and
// what those tagged with the incident give beyond the debits is a second credit for it (a copy of the credit).
// The currency_mismatch alert asks for, and puts at stake, what is left of the credit, not the whole credit again.
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
const credit = { kind: 'credit', customer: 'cus_chain', amount: 1_000, incident: 'INC-chain' };
const premises = { subscription_status: null, incident_compensation: 0 };
const approval = snapshot({ scope: 'customer:cus_chain' });
const sent = [
  { ...drafts.proposed(), effect: credit, premises },
  drafts.authorized(approval),
  { ...drafts.dispatched(), effect: credit, premises, checks: checks({ approval }) },
  { kind: 'COMMITTED', via: 'send', result: { id: 'cbtxn_own', object: 'customer_balance_transaction', amount: -1_000, currency: 'usd', customer: 'cus_chain', type: 'adjustment', created: 1 }, found: 'cbtxn_own', rechecked: null, epoch: 1 } as const,
];
const receiptOf = (name: string, facts: readonly Draft<'OBSERVED'>[]) => {
  const effectId = effectIdFor({ requestId: name, effect: credit });
  return buildReceipt(effectId, sealChain(effectId, [...sent, ...facts], key), key, T0 + 60_000);
};
const verified = (name: string, facts: readonly Draft<'OBSERVED'>[]) => {
  const result = verify(JSON.parse(JSON.stringify(receiptOf(name, facts))), { publicKeys });
  expect(result.problems).toEqual([]);
  expect(result.valid).toBe(true);
  return result;
};
const balance = (id: string, amount: number, more: Partial<EntryFields['OBSERVED']> = {}) => drafts.observed({ objectType: 'customer_balance_transaction', objectId: id, eventType: 'customer.updated', status: 'credited', amount, charge: null, ...more });
const own = (currency?: string | null, customerCurrency?: string | null) => balance('cbtxn_own', -1_000, { ...(currency === undefined ? {} : { currency }), ...(customerCurrency === undefined ? {} : { customerCurrency }) });
const note = (amount: number) => drafts.observed({ objectType: 'credit_note', objectId: 'cn_billing', eventType: 'credit_note.created', status: 'issued', amount, charge: null, incident: 'INC-chain', currency: 'usd' });

describe('a credit in another currency than the customer is billed in', () => {
  it('reads not_returned (currency_mismatch), raises an alert naming both currencies and the label of the take-back, and is no second compensation', () => {
    const result = verified('mismatch', [own('usd', 'eur'), note(600)]);
    expect(result).toMatchObject({ answer: 'returned', answerMatchesFinalMoney: false, compensatedTwice: null });
    expect(result.finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'currency_mismatch', currencyMismatch: { credit: 'cbtxn_own', cents: 1_000, currency: 'usd', customerCurrency: 'eur' } });
    const alerts = alertsFor(result);
    expect(alerts.map((alert) => alert.kind)).toEqual(['failed_after_landed']);
    expect(alerts[0]).toMatchObject({ centsAtStake: 1_000, refund: 'cbtxn_own' });
    expect(alerts[0]?.sentence).toMatch(/landed in usd, but the customer is billed in eur/);
    expect(alerts[0]?.action).toContain(`metadata[interlock_effect_id]=${result.effectId ?? ''}`);
    expect(alerts[0]?.action).toContain('`amount=1000`, `currency=usd`');

    // Taken back with a labelled debit in its own currency: not_returned without the mismatch, and nothing to act on.
    const takenBack = verified('mismatch-taken-back', [own('usd', 'eur'), balance('cbtxn_debit', 1_000, { currency: 'usd' })]);
    expect(takenBack.finalMoney).toMatchObject({ status: 'not_returned', failureReason: null });
    expect(takenBack.finalMoney.currencyMismatch).toBeUndefined();
    expect(alertsFor(takenBack)).toEqual([]);
  });

  it('the latest fact of the customer\'s currency decides; a customer billed in none yet, or in the credit\'s, is credited', () => {
    expect(verified('latest-eur', [own('usd', 'usd'), own('usd', 'eur')]).finalMoney.status).toBe('not_returned');
    expect(verified('latest-usd', [own('usd', 'eur'), own('usd', 'usd')]).finalMoney.status).toBe('returned');
    expect(verified('none-yet', [own('usd', null)]).finalMoney).toEqual(expect.not.objectContaining({ currencyMismatch: expect.anything() }));
    expect(verified('same', [own('usd', 'usd')])).toMatchObject({ finalMoney: { status: 'returned', failureReason: null }, answerMatchesFinalMoney: true });
  });
});

describe('receipts recorded before facts carried currencies', () => {
  // A guard, not a fix: it passes on the code before currencies were recorded, and must keep passing.
  it('verify, and read as they did', () => {
    expect(verified('old-own', [own()])).toMatchObject({ finalMoney: { status: 'returned', failureReason: null }, answerMatchesFinalMoney: true });
    // An old debit fact (no currency) still takes the credit back.
    expect(verified('old-debit', [own(), balance('cbtxn_debit', 1_000)]).finalMoney.status).toBe('not_returned');
  });

  it('the new fields are part of the receipt\'s shape: one that is not a currency code or null is malformed, on both ways of reading it', () => {
    const good = JSON.parse(JSON.stringify(receiptOf('shape', [own('usd', 'eur'), balance('cbtxn_debit', 200, { currency: 'usd' })]))) as unknown;
    expect(quickShape(good)).not.toBeNull();
    expect(receiptSchema.safeParse(good).success).toBe(true);
    // Signed as the service would sign it: only its shape is wrong.
    const bad = JSON.parse(JSON.stringify(receiptOf('shape-bad', [balance('cbtxn_own', -1_000, { currency: 5 as unknown as string, customerCurrency: 'eur' })]))) as unknown;
    expect(quickShape(bad)).toBeNull();
    expect(receiptSchema.safeParse(bad).success).toBe(false);
    expect(verify(bad, { publicKeys })).toMatchObject({ valid: false, problems: [expect.stringMatching(/malformed at entries\.4\.currency/)] });
  });
});

describe('debits labelled with the effect', () => {
  it('one in another currency than the credit takes none of it back', () => {
    expect(verified('other-currency', [own('usd', 'usd'), balance('cbtxn_debit', 1_000, { currency: 'eur' })]).finalMoney.status).toBe('returned');
  });

  it('the part paid twice is what is left of the credit against billing\'s compensation, and the action debits what is left', () => {
    const result = verified('partly', [own('usd', 'usd'), balance('cbtxn_debit', 400, { currency: 'usd' }), note(800)]);
    expect(result.compensatedTwice).toMatchObject({ cents: 600, ownCents: 1_000, reversedCents: 400, notesCents: 800, currency: 'usd' });
    const alert = alertsFor(result).find((draft) => draft.kind === 'compensated_twice');
    expect(alert?.centsAtStake).toBe(600);
    expect(alert?.action).toContain('`amount=600`, `currency=usd`');
    expect(alert?.action).toContain('`metadata[interlock_incident]=INC-chain`');
  });
});

describe('billing\'s balance credits for the incident', () => {
  const billing = (id: string, amount: number) => balance(id, amount, { incident: 'INC-chain' });

  it('count net of billing\'s debits tagged with the incident, never below nothing', () => {
    expect(verified('billing-taken-back', [own('usd', 'usd'), billing('cbtxn_b1', -700), billing('cbtxn_b2', 700)]).compensatedTwice).toBeNull();
    expect(verified('billing-partly', [own('usd', 'usd'), billing('cbtxn_b1', -700), billing('cbtxn_b2', 300)]).compensatedTwice).toMatchObject({ cents: 400, notesCents: 400, balanceCredits: ['cbtxn_b1'] });
    // A debit beyond billing's credits does not undo its credit note.
    expect(verified('billing-over', [own('usd', 'usd'), billing('cbtxn_b2', 900), note(500)]).compensatedTwice).toMatchObject({ cents: 500, notesCents: 500, creditNotes: ['cn_billing'], balanceCredits: [] });
  });

  it('billing\'s tagged debit is no take-back of this credit', () => {
    expect(verified('billing-debit-only', [own('usd', 'usd'), billing('cbtxn_b2', 1_000)]).finalMoney.status).toBe('returned');
  });
});

describe('a credit in another currency, partly taken back', () => {
  it('the mismatch, its alert and the debit the alert asks for are what is left of the credit, not the whole credit', () => {
    const result = verified('mismatch-partly', [own('usd', 'eur'), balance('cbtxn_debit', 400, { currency: 'usd' })]);
    expect(result.finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'currency_mismatch', currencyMismatch: { credit: 'cbtxn_own', cents: 600, creditCents: 1_000, currency: 'usd' } });
    const [alert] = alertsFor(result);
    expect(alert).toMatchObject({ kind: 'failed_after_landed', centsAtStake: 600 });
    expect(alert?.action).toContain('`amount=600`, `currency=usd`');
    expect(alert?.action).not.toContain('amount=1000');
    expect(alert?.sentence).toContain('($10.00, of which $6.00 is left');
  });

  it('a re-credit undoing the debit puts the whole credit back at stake', () => {
    const result = verified('mismatch-undone', [own('usd', 'eur'), balance('cbtxn_debit', 400, { currency: 'usd' }), balance('cbtxn_again', -400, { currency: 'usd' })]);
    expect(result.finalMoney.currencyMismatch).toMatchObject({ cents: 1_000, creditCents: 1_000 });
    expect(alertsFor(result)[0]).toMatchObject({ centsAtStake: 1_000 });
  });
});

describe('credits labelled with the effect that its send did not make (re-credits)', () => {
  const debit = (id: string, cents: number, currency = 'usd') => balance(id, cents, { currency });
  const reCredit = (id: string, cents: number, currency = 'usd', incident: string | null = null) => balance(id, -cents, { currency, incident });

  it('undo a take-back: the credit reads returned again, whichever was recorded first', () => {
    expect(verified('undone', [own('usd', 'usd'), debit('cbtxn_debit', 1_000), reCredit('cbtxn_again', 1_000)])).toMatchObject({ finalMoney: { status: 'returned', failureReason: null }, answerMatchesFinalMoney: true, happenedOnce: true });
    expect(verified('undone-first', [own('usd', 'usd'), reCredit('cbtxn_again', 1_000), debit('cbtxn_debit', 1_000)]).finalMoney.status).toBe('returned');
  });

  it('are netted against the debits, capped at the credit', () => {
    // $15 taken, $5 given back: $10, the whole credit, is taken back.
    expect(verified('net-whole', [own('usd', 'usd'), debit('cbtxn_debit', 1_500), reCredit('cbtxn_again', 500)]).finalMoney.status).toBe('not_returned');
    // $20 taken, $5 given back: still at most the credit.
    expect(verified('net-capped', [own('usd', 'usd'), debit('cbtxn_debit', 2_000), reCredit('cbtxn_again', 500)]).finalMoney.status).toBe('not_returned');
    // $10 taken, $4 given back: $6 taken back, $4 left beside billing's $8 note.
    expect(verified('net-partly', [own('usd', 'usd'), debit('cbtxn_debit', 1_000), reCredit('cbtxn_again', 400), note(800)]).compensatedTwice).toMatchObject({ cents: 400, ownCents: 1_000, reversedCents: 600 });
  });

  // Guards of the netting (they pass on the code before re-credits, which read none): re-credits beyond the debits
  // never count as less than nothing taken back, and one in another currency moves none of the credit.
  it('one before any take-back counts the credit once: returned, nothing taken back and nothing more than the credit paid twice', () => {
    const result = verified('before', [own('usd', 'usd'), reCredit('cbtxn_extra', 500), note(1_200)]);
    expect(result).toMatchObject({ finalMoney: { status: 'returned' }, answerMatchesFinalMoney: true, happenedOnce: true });
    expect(result.compensatedTwice).toMatchObject({ cents: 1_000, ownCents: 1_000, reversedCents: 0, notesCents: 1_200 });
    expect(alertsFor(result).find((alert) => alert.kind === 'compensated_twice')?.action).toContain('`amount=1000`');
  });

  it('one in another currency than the credit gives none of it back', () => {
    expect(verified('other-currency-again', [own('usd', 'usd'), debit('cbtxn_debit', 1_000), reCredit('cbtxn_again', 1_000, 'eur')]).finalMoney.status).toBe('not_returned');
  });

  it('one tagged with the incident undoes a take-back as any other: no second compensation', () => {
    expect(verified('tagged-again', [own('usd', 'usd'), debit('cbtxn_debit', 1_000), reCredit('cbtxn_again', 1_000, 'usd', 'INC-chain')])).toMatchObject({ finalMoney: { status: 'returned' }, compensatedTwice: null });
    // Recorded before as another party's compensation (tagged, labelled with the effect), now as a re-credit: the latest role stands.
    expect(verified('tagged-recorded-before', [own('usd', 'usd'), debit('cbtxn_debit', 1_000), balance('cbtxn_again', -1_000, { incident: 'INC-chain' }), reCredit('cbtxn_again', 1_000, 'usd', 'INC-chain')])).toMatchObject({ finalMoney: { status: 'returned' }, compensatedTwice: null });
  });

  it('what one tagged with the incident gives beyond the debits is a second credit for it; untagged, it is not', () => {
    // A copy of the credit (a replayed request): the customer holds two credits for one incident.
    expect(verified('copy', [own('usd', 'usd'), reCredit('cbtxn_copy', 1_000, 'usd', 'INC-chain')])).toMatchObject({
      finalMoney: { status: 'returned' },
      compensatedTwice: { cents: 1_000, reversedCents: 0, notesCents: 1_000, balanceCredits: ['cbtxn_copy'] },
    });
    // $4 taken back, $10 given back tagged: $6 beyond the debit is the second credit. Untagged re-credits offset first.
    expect(verified('copy-partly', [own('usd', 'usd'), debit('cbtxn_debit', 400), reCredit('cbtxn_copy', 1_000, 'usd', 'INC-chain')]).compensatedTwice).toMatchObject({ cents: 600, notesCents: 600 });
    expect(verified('copy-offset', [own('usd', 'usd'), debit('cbtxn_debit', 400), reCredit('cbtxn_back', 400), reCredit('cbtxn_copy', 1_000, 'usd', 'INC-chain')]).compensatedTwice).toMatchObject({ cents: 1_000, notesCents: 1_000 });
    // Billing's debit tagged with the incident takes the copy back, as it takes billing's own tagged credits back.
    expect(verified('copy-taken-back', [own('usd', 'usd'), reCredit('cbtxn_copy', 1_000, 'usd', 'INC-chain'), balance('cbtxn_b2', 1_000, { incident: 'INC-chain' })]).compensatedTwice).toBeNull();
    expect(verified('untagged-beyond', [own('usd', 'usd'), reCredit('cbtxn_extra', 1_000)]).compensatedTwice).toBeNull();
  });
});

describe('receipts recorded before re-credits were recorded', () => {
  // A guard, not a fix: it passes on the code before re-credits, and must keep passing. No fact recorded before has a
  // credit with its currency and without the customer's: the own credit always carries the customer's since facts
  // carried currencies, and nothing carried a currency before that.
  it('read their credits as they did', () => {
    expect(verified('old-credit-facts', [own(), balance('cbtxn_debit', 1_000), balance('cbtxn_other', -1_000)]).finalMoney.status).toBe('not_returned');
    expect(verified('old-own-shape', [own('usd', 'usd'), balance('cbtxn_debit', 1_000, { currency: 'usd' }), balance('cbtxn_other', -1_000, { currency: 'usd', customerCurrency: 'usd' })]).finalMoney.status).toBe('not_returned');
  });
});
