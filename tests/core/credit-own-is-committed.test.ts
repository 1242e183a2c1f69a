// Rule (DESIGN §3 F, §8; core/final-money.ts): once the commit (or a late landing) names the balance credit the effect's
// send made, that one is the effect's own and no other is, so a receipt signed with a fact that recorded another
// credit as its own (the facts worker took one labelled by hand with the effect's id and amount while the dispatch was
// open) reads what the committed credit did: returned, not currency_mismatch from the other credit's currency, and no
// alert asking to move money back. Before a commit names one, an own fact still stands for the credit.
import { describe, expect, it } from 'vitest';
import { alertsFor } from '../../src/core/alert-rules.js';
import { effectIdFor } from '../../src/core/effect-id.js';
import type { Draft, EntryFields, EntryKind } from '../../src/core/entries.js';
import { buildReceipt } from '../../src/core/receipt.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { checks, drafts, sealChain, snapshot, T0 } from './entry-chain.js';

const { key, publicKeys } = testKey();
const credit = { kind: 'credit', customer: 'cus_chain', amount: 1_000, incident: 'INC-chain' };
const premises = { subscription_status: null, incident_compensation: 0 };
const approval = snapshot({ scope: 'customer:cus_chain' });
const dispatched = [{ ...drafts.proposed(), effect: credit, premises }, drafts.authorized(approval), { ...drafts.dispatched(), effect: credit, premises, checks: checks({ approval }) }];
const committed = { kind: 'COMMITTED', via: 'send', result: { id: 'cbtxn_own', object: 'customer_balance_transaction', amount: -1_000, currency: 'usd', customer: 'cus_chain', type: 'adjustment', created: 1 }, found: 'cbtxn_own', rechecked: null, epoch: 1 } as const;
const balance = (id: string, amount: number, more: Partial<EntryFields['OBSERVED']> = {}) => drafts.observed({ objectType: 'customer_balance_transaction', objectId: id, eventType: 'customer.updated', status: 'credited', amount, charge: null, ...more });
// The hand-made credit in eur, recorded as the effect's own while it was in flight (with the customer's currency).
const labelledAsOwn = balance('cbtxn_by_hand', -1_000, { currency: 'eur', customerCurrency: 'usd' });

const verified = (name: string, chain: readonly Draft<EntryKind>[]) => {
  const effectId = effectIdFor({ requestId: name, effect: credit });
  const result = verify(JSON.parse(JSON.stringify(buildReceipt(effectId, sealChain(effectId, chain, key), key, T0 + 60_000))), { publicKeys });
  expect(result.problems).toEqual([]);
  return result;
};

describe("a credit's own balance credit is the one its commit names", () => {
  it('a receipt that recorded a hand-made credit in another currency as its own in flight reads the committed credit: returned, no currency_mismatch, no alert', () => {
    const result = verified('own-in-flight', [...dispatched, labelledAsOwn, committed, balance('cbtxn_own', -1_000, { currency: 'usd', customerCurrency: 'usd' })]);
    expect(result.finalMoney).toMatchObject({ status: 'returned', failureReason: null });
    expect(result.finalMoney.currencyMismatch).toBeUndefined();
    expect(result.answerMatchesFinalMoney).toBe(true);
    expect(alertsFor(result)).toEqual([]);
  });

  it('so does one whose re-read after the commit recorded the hand-made credit again, as a re-credit', () => {
    const reCredit = balance('cbtxn_by_hand', -1_000, { currency: 'eur', incident: null });
    const result = verified('own-in-flight-then-recredit', [...dispatched, labelledAsOwn, committed, reCredit]);
    expect(result.finalMoney).toMatchObject({ status: 'returned', failureReason: null });
    expect(result.finalMoney.currencyMismatch).toBeUndefined();
    expect(result.compensatedTwice).toBeNull();
    expect(alertsFor(result)).toEqual([]);
  });

  it("the committed credit's own fact in another currency than the customer's still reads currency_mismatch", () => {
    const result = verified('own-mismatch', [...dispatched, labelledAsOwn, committed, balance('cbtxn_own', -1_000, { currency: 'usd', customerCurrency: 'eur' })]);
    expect(result.finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'currency_mismatch', currencyMismatch: { credit: 'cbtxn_own', currency: 'usd', customerCurrency: 'eur' } });
  });

  it('before a commit names one, an own fact still stands for the credit (an effect settled AMBIGUOUS)', () => {
    const ambiguous: Draft<'AMBIGUOUS'> = { kind: 'AMBIGUOUS', reason: 'no answer', rechecked: null, epoch: 1 };
    const result = verified('own-ambiguous', [...dispatched, labelledAsOwn, ambiguous]);
    expect(result.finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'currency_mismatch', currencyMismatch: { credit: 'cbtxn_by_hand' } });
  });
});
