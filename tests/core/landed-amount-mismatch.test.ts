// Rule: a receipt agrees with the money at Stripe: when the refund or balance credit the effect's send made is recorded
// at another amount than the effect's (its commit result, a late landing, or a fact read since), verify() lists a
// problem naming both amounts, and the gate's answer does not match the final money while Stripe's latest word on the
// object is that other amount. The status stays the lifecycle's.
import { describe, expect, it } from 'vitest';
import type { Draft, EntryKind } from '../../src/core/entries.js';
import { effectIdFor } from '../../src/core/effect-id.js';
import { CUSTOMER_DELETED } from '../../src/core/final-money.js';
import { buildReceipt } from '../../src/core/receipt.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { chainReceipt, checks, drafts, refundObject, sealChain, snapshot, T0 } from './entry-chain.js';

const { key, publicKeys } = testKey();
const REFUND = 're_amount';
const sent = [drafts.proposed(), drafts.authorized(), drafts.dispatched()];
const refundFact = (amount: number, status = 'succeeded') => drafts.observed({ objectType: 'refund', objectId: REFUND, status, amount });

describe('a refund recorded at another amount than the effect approved (2000 cents)', () => {
  it.each([
    ['1 cent', 1, '$0.01'],
    ['5000 cents', 5_000, '$50.00'],
  ])('a commit result of %s is a problem naming both amounts, and the gate answer does not match', (name, amount, text) => {
    const receipt = chainReceipt(`amount-commit-${amount}`, [...sent, drafts.committed(REFUND, { result: refundObject(REFUND, { amount, currency: 'usd' }) })], key);
    const result = verify(receipt, { publicKeys });
    expect(result.finalMoney).toMatchObject({ status: 'returned', refund: { id: REFUND, amount } });
    expect(result.answerMatchesFinalMoney).toBe(false);
    expect(result.valid).toBe(false);
    expect(result.problems).toEqual([`entry 4 (COMMITTED) records refund ${REFUND} at ${text}, not the effect's amount of $20.00: the money that moved at Stripe is not what was approved and reported sent`]);
  });

  it('a fact read after a right commit that says another amount is a problem, and it is the money at Stripe', () => {
    const result = verify(chainReceipt('amount-fact', [...sent, drafts.committed(REFUND), refundFact(2_000), refundFact(1), refundFact(1)], key), { publicKeys });
    expect(result.answerMatchesFinalMoney).toBe(false);
    expect(result.problems).toHaveLength(1);
    expect(result.problems[0]).toMatch(/^entry 6 \(OBSERVED\) and 1 more record refund re_amount at 1 \(minor units, currency unknown\), not the effect's amount of 2000 \(minor units, currency unknown\): /);
  });

  it("a commit result of another amount that Stripe's later fact contradicts is still a problem, but the final money matches", () => {
    const result = verify(chainReceipt('amount-then-right', [...sent, drafts.committed(REFUND, { result: refundObject(REFUND, { amount: 1 }) }), refundFact(2_000)], key), { publicKeys });
    expect(result.finalMoney.refund?.amount).toBe(2_000);
    expect(result.answerMatchesFinalMoney).toBe(true);
    expect(result.problems).toEqual([`entry 4 (COMMITTED) records refund ${REFUND} at 1 (minor units, currency unknown), not the effect's amount of 2000 (minor units, currency unknown), which a later record of it contradicts`]);
  });

  it('a refund of the effect\'s amount, or one whose records carry no amount, is no problem', () => {
    expect(verify(chainReceipt('amount-right', [...sent, drafts.committed(REFUND), refundFact(2_000)], key), { publicKeys })).toMatchObject({ problems: [], answerMatchesFinalMoney: true, valid: true });
    const unstated = verify(chainReceipt('amount-none', [...sent, drafts.committed(REFUND, { result: refundObject(REFUND, { amount: null }) }), drafts.observed({ objectType: 'refund', objectId: REFUND, status: 'succeeded' })], key), { publicKeys });
    expect(unstated).toMatchObject({ problems: [], answerMatchesFinalMoney: true });
  });

  it('an AMBIGUOUS send whose refund is later read at another amount is flagged too', () => {
    const ambiguous: Draft<'AMBIGUOUS'> = { kind: 'AMBIGUOUS', reason: 'the send timed out', rechecked: null, epoch: 1 };
    const result = verify(chainReceipt('amount-ambiguous', [...sent, ambiguous, refundFact(700)], key), { publicKeys });
    expect(result.problems).toEqual([expect.stringMatching(/^entry 5 \(OBSERVED\) records refund re_amount at 700 .*not the effect's amount of 2000 /)]);
  });
});

describe('a balance credit recorded at another amount than the effect approved (1000 cents)', () => {
  const credit = { kind: 'credit', customer: 'cus_chain', amount: 1_000, incident: 'INC-chain' };
  const premises = { subscription_status: 'active', incident_compensation: 0 };
  const approval = snapshot({ scope: 'customer:cus_chain' });
  const creditSent = [{ ...drafts.proposed(), effect: credit, premises }, drafts.authorized(approval), { ...drafts.dispatched(), effect: credit, premises, checks: checks({ approval }) }];
  const landed = (amount: number): Draft<'COMMITTED'> => ({ kind: 'COMMITTED', via: 'send', result: { id: 'cbtxn_own', object: 'customer_balance_transaction', amount, currency: 'usd' }, found: 'cbtxn_own', rechecked: null, epoch: 1 });
  const creditReceipt = (name: string, list: readonly Draft<EntryKind>[]) => {
    const effectId = effectIdFor({ requestId: name, effect: credit });
    return buildReceipt(effectId, sealChain(effectId, list, key), key, T0 + 60_000);
  };

  it('a credit of 1 cent given for an effect of $10.00 is a problem naming both amounts', () => {
    const result = verify(creditReceipt('credit-amount', [...creditSent, landed(-1)]), { publicKeys });
    expect(result.finalMoney.status).toBe('returned');
    expect(result.answerMatchesFinalMoney).toBe(false);
    expect(result.problems).toEqual(["entry 4 (COMMITTED) records balance credit cbtxn_own at $0.01, not the effect's amount of $10.00: the money that moved at Stripe is not what was approved and reported sent"]);
  });

  it("the deletion's share of the customer's balance recorded on the credit is no amount of it", () => {
    const deleted = drafts.observed({ objectType: 'customer_balance_transaction', objectId: 'cbtxn_own', eventType: 'customer.deleted', status: CUSTOMER_DELETED, amount: -300, charge: null, customerCurrency: 'usd' });
    const own = drafts.observed({ objectType: 'customer_balance_transaction', objectId: 'cbtxn_own', eventType: 'customer.updated', amount: -1_000, charge: null, currency: 'usd', customerCurrency: 'usd' });
    const result = verify(creditReceipt('credit-deleted', [...creditSent, landed(-1_000), own, deleted]), { publicKeys });
    expect(result).toMatchObject({ problems: [], answerMatchesFinalMoney: true });
  });
});
