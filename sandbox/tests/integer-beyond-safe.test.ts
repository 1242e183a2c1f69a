// Rule: an integer parameter is taken exactly or refused with 400 parameter_invalid_integer: a figure past 2^53 (a
// balance transaction of -9007199254740993, a refund of 1e23) was stored as a neighbouring number and answered with an
// exponent, so a test of the gate against the sandbox could pass on an amount nobody sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { raw, startHarness, type Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

describe('integer parameters the sandbox cannot hold exactly', () => {
  it.each(['-9007199254740993', '-99999999999999999999999', '9007199254740992'])('a balance transaction of %s is refused as an invalid integer, and nothing is recorded', async (amount) => {
    const customer = await h.stripe.customers.create({});
    const answer = await raw(h.sandbox, 'POST', `/v1/customers/${customer.id}/balance_transactions`, { body: `amount=${amount}&currency=usd` });
    expect(answer.status).toBe(400);
    expect(answer.json['error']).toMatchObject({ code: 'parameter_invalid_integer', param: 'amount', message: `Invalid integer: ${amount}` });
    const listed = await h.stripe.customers.listBalanceTransactions(customer.id);
    expect(listed.data).toEqual([]);
  });

  it('the largest exact integer is still read as itself', async () => {
    const customer = await h.stripe.customers.create({});
    const answer = await raw(h.sandbox, 'POST', `/v1/customers/${customer.id}/balance_transactions`, { body: 'amount=-9007199254740991&currency=usd' });
    expect(answer.status).toBe(200);
    expect(answer.json['amount']).toBe(-9007199254740991);
  });
});
