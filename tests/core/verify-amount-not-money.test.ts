// Rule: verify() names a landed refund recorded at another amount than the effect's in words that never read as the
// same money: an amount that is not a whole number of minor units (2000.4 beside the effect's 2000) or one past any
// exact sum (1e25) is quoted as its number and says so, never `$20.00, not ... $20.00` or `$1.0000000000000001e+23`.
import { describe, expect, it } from 'vitest';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { chainReceipt, drafts, refundObject } from './entry-chain.js';

const { key, publicKeys } = testKey();
const REFUND = 're_odd';
const sent = [drafts.proposed(), drafts.authorized(), drafts.dispatched()];

describe('a refund recorded at an amount that is no sum of money, beside the effect approved (2000 cents)', () => {
  it.each([
    ['not a whole number of cents', 2_000.4, '2000.4 (not a whole number of minor units of USD)'],
    ['past any exact sum', 1e25, '1e+25 (minor units of USD, too large to state exactly)'],
  ])('an amount %s is quoted as its number, with why, beside the effect amount', (name, amount, text) => {
    const receipt = chainReceipt(`odd-amount-${name}`, [...sent, drafts.committed(REFUND, { result: refundObject(REFUND, { amount, currency: 'usd' }) })], key);
    const result = verify(receipt, { publicKeys });
    expect(result.valid).toBe(false);
    expect(result.problems).toEqual([`entry 4 (COMMITTED) records refund ${REFUND} at ${text}, not the effect's amount of $20.00: the money that moved at Stripe is not what was approved and reported sent`]);
  });
});
