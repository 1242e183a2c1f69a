// Rule: an inbox item and an alert state the effect's money in the effect's own currency, known from its chain
// (currencyOfEffect): the landed object's (a commit result, a late landing's), else the `currency` premise as a premise
// check read it, else as decided on. A ¥5000 refund or credit refused on a stale premise, or left AMBIGUOUS, is "5000
// JPY", not "$50.00". A chain that says no currency (recorded before the premise existed, or proposed without it) is
// of a currency unknown, and no amount of it is ever written with a dollar sign.
import { describe, expect, it } from 'vitest';
import { currencyOfEffect } from '../../src/core/effect-currency.js';
import { effectIdFor } from '../../src/core/effect-id.js';
import type { Draft, EntryKind } from '../../src/core/entries.js';
import { inboxItemFor } from '../../src/core/inbox.js';
import type { JsonObject } from '../../src/core/json.js';
import { moneyText } from '../../src/core/money-text.js';
import { testKey } from '../support/harness.js';
import { checks, drafts, refundObject, sealChain } from './entry-chain.js';

const { key } = testKey();

const REFUND: JsonObject = { kind: 'refund', paymentIntent: 'pi_yen', amount: 5_000, reason: 'requested_by_customer' };
const CREDIT: JsonObject = { kind: 'credit', customer: 'cus_yen', amount: 5_000, incident: 'INC-yen' };

function chain(name: string, effect: JsonObject, list: readonly Draft<EntryKind>[]) {
  const effectId = effectIdFor({ requestId: name, effect });
  return { effectId, entries: sealChain(effectId, list, key) };
}

const proposed = (effect: JsonObject, premises: JsonObject): Draft<'PROPOSED'> => ({ ...drafts.proposed(), effect, premises });
const dispatched = (effect: JsonObject, premises: JsonObject): Draft<'DISPATCHED'> => ({ ...drafts.dispatched(), effect, premises });
const stale = (field: string, was: JsonObject[string], now: JsonObject[string]): Draft<'REFUSED'> => {
  const changes = [{ field, was: was ?? null, now: now ?? null }];
  return { kind: 'REFUSED', code: 'REFUSED:stale_premise', reason: `premise ${field} changed`, checks: checks({ violations: [`${field} changed`], changes }), rechecked: null, changes, resolves: false };
};

describe('the currency of an effect, from its chain', () => {
  it('is the landed object\'s first, then the currency premise as read, then as decided on', () => {
    const premises = { chargebacks: [], currency: 'JPY' };
    expect(currencyOfEffect(chain('decided', REFUND, [proposed(REFUND, premises)]).entries)).toBe('jpy');
    const landed = { ...drafts.committed('re_yen'), result: refundObject('re_yen', { currency: 'eur' }) };
    expect(currencyOfEffect(chain('landed', REFUND, [proposed(REFUND, premises), drafts.authorized(), dispatched(REFUND, premises), landed]).entries)).toBe('eur');
    // Declared usd on a jpy payment: the premise check read jpy, and refused on it; the read is the truth.
    const misdeclared = chain('misdeclared', REFUND, [proposed(REFUND, { currency: 'usd' }), stale('currency', 'usd', 'jpy')]);
    expect(currencyOfEffect(misdeclared.entries)).toBe('jpy');
    const late: Draft<'LATE_RESULT'> = { kind: 'LATE_RESULT', owner: 'w-late', epoch: 1, outcome: 'landed', result: { id: 'cbtxn_yen', object: 'customer_balance_transaction', amount: -5_000, currency: 'jpy', customer: 'cus_yen', type: 'adjustment', created: 1 }, error: null };
    expect(currencyOfEffect(chain('late', CREDIT, [proposed(CREDIT, {}), late]).entries)).toBe('jpy');
    // A late landing the facts noticed, its result without a currency: the fact they recorded of that credit names it;
    // a fact of another object (a take-back debit in another currency) does not.
    const noticed: Draft<'LATE_RESULT'> = { ...late, result: { id: 'cbtxn_yen', object: 'customer_balance_transaction', status: 'credited', amount: -5_000, charge: null } };
    const own = drafts.observed({ objectType: 'customer_balance_transaction', objectId: 'cbtxn_yen', status: 'credited', amount: -5_000, charge: null, currency: 'jpy', customerCurrency: 'jpy' });
    const debit = drafts.observed({ objectType: 'customer_balance_transaction', objectId: 'cbtxn_debit', status: 'debited', amount: 100, charge: null, currency: 'eur' });
    expect(currencyOfEffect(chain('noticed', CREDIT, [proposed(CREDIT, {}), own, noticed, debit]).entries)).toBe('jpy');
    expect(currencyOfEffect(chain('debit-only', CREDIT, [proposed(CREDIT, {}), noticed, debit]).entries)).toBeNull();
  });

  it('is null for a chain that says none (an old chain, a proposal without the premise, a value that is no currency code)', () => {
    expect(currencyOfEffect(chain('old', REFUND, [proposed(REFUND, { chargebacks: [] }), drafts.authorized(), dispatched(REFUND, { chargebacks: [] }), drafts.committed('re_old')]).entries)).toBeNull();
    expect(currencyOfEffect(chain('odd', REFUND, [proposed(REFUND, { currency: 'dollars' })]).entries)).toBeNull();
    expect(currencyOfEffect([])).toBeNull();
  });
});

describe('an inbox item opened from a settled effect', () => {
  it('a jpy refund refused on a stale premise carries jpy and reads 5000 JPY', () => {
    const premises = { chargebacks: [], refunded_by_others: 0, currency: 'jpy' };
    const { effectId, entries } = chain('stale-refund', REFUND, [proposed(REFUND, premises), stale('refunded_by_others', 0, 1_000)]);
    const item = inboxItemFor(effectId, 'payment:pi_yen', entries, 'usd');
    expect(item).toMatchObject({ kind: 'stale_premise', centsAtStake: 5_000, currency: 'jpy' });
    expect(moneyText(item?.centsAtStake ?? 0, item?.currency ?? null)).toBe('5000 JPY');
  });

  it('a jpy credit left AMBIGUOUS carries jpy and reads 5000 JPY', () => {
    const premises = { subscription_status: 'active', incident_compensation: 0, currency: 'jpy' };
    const ambiguous: Draft<'AMBIGUOUS'> = { kind: 'AMBIGUOUS', reason: 'the lookup can no longer tell', rechecked: null, epoch: 1 };
    const { effectId, entries } = chain('ambiguous-credit', CREDIT, [proposed(CREDIT, premises), drafts.authorized(), dispatched(CREDIT, premises), ambiguous]);
    const item = inboxItemFor(effectId, 'customer:cus_yen', entries, 'usd');
    expect(item).toMatchObject({ kind: 'ambiguous', centsAtStake: 5_000, currency: 'jpy' });
    expect(moneyText(item?.centsAtStake ?? 0, item?.currency ?? null)).toBe('5000 JPY');
  });

  it('one whose chain says no currency reads as of a currency unknown, never in dollars', () => {
    const { effectId, entries } = chain('stale-old', REFUND, [proposed(REFUND, { refunded_by_others: 0 }), stale('refunded_by_others', 0, 1_000)]);
    const item = inboxItemFor(effectId, 'payment:pi_yen', entries, 'usd');
    expect(item?.currency).toBeNull();
    const shown = moneyText(item?.centsAtStake ?? 0, item?.currency ?? null);
    expect(shown).not.toContain('$');
    expect(shown).toBe('5000 (minor units, currency unknown)');
  });
});
