// Rule: `GET /v1/customers/{customer}/balance_transactions` filters by `created` as Stripe does (stripe-facts §8.1:
// "filters `created`, `invoice`"): an integer (that second exactly) or a range of `gt`, `gte`, `lt`, `lte` (Unix
// seconds), paged like any list. The credit target's lookup lists only what was created since the effect's dispatch.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../index.js';
import type { Sandbox } from '../index.js';

let sandbox: Sandbox;
let stripe: Stripe;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, delays: 'fast' });
  stripe = new Stripe('sk_test_balance_created', { host: sandbox.host, port: sandbox.port, protocol: 'http', maxNetworkRetries: 0 });
});
afterAll(() => sandbox.close());

describe('sandbox: the created filter of a customer\'s balance transactions', () => {
  it('keeps the transactions created in the range, int or {gt, gte, lt, lte}', async () => {
    // A customer on a test clock: its transactions are created at the clock's time, which the test moves.
    const clock = await stripe.testHelpers.testClocks.create({ frozen_time: 1_700_000_000 });
    const customer = (await stripe.customers.create({ name: 'dated', test_clock: clock.id })).id;
    const at: Record<number, string> = {};
    for (const time of [1_700_000_000, 1_700_000_100, 1_700_000_200]) {
      if (time !== 1_700_000_000) {
        await stripe.testHelpers.testClocks.advance(clock.id, { frozen_time: time });
        for (let i = 0; i < 50 && (await stripe.testHelpers.testClocks.retrieve(clock.id)).status !== 'ready'; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      at[time] = (await stripe.customers.createBalanceTransaction(customer, { amount: -100, currency: 'usd' })).id;
    }
    const ids = async (created: Stripe.RangeQueryParam | number) => (await stripe.customers.listBalanceTransactions(customer, { created, limit: 100 })).data.map((t) => t.id);
    expect(await ids(1_700_000_100)).toEqual([at[1_700_000_100]]);
    expect(await ids({ gte: 1_700_000_100 })).toEqual([at[1_700_000_200], at[1_700_000_100]]);
    expect(await ids({ gt: 1_700_000_100 })).toEqual([at[1_700_000_200]]);
    expect(await ids({ lt: 1_700_000_100 })).toEqual([at[1_700_000_000]]);
    expect(await ids({ gte: 1_700_000_000, lte: 1_700_000_100 })).toEqual([at[1_700_000_100], at[1_700_000_000]]);
    expect(await ids({ gte: 1_700_000_201 })).toEqual([]);
    // Paged within the range: one item a page, the cursor from the filtered list.
    const first = await stripe.customers.listBalanceTransactions(customer, { created: { gte: 1_700_000_100 }, limit: 1 });
    expect(first.data.map((t) => t.id)).toEqual([at[1_700_000_200]]);
    expect(first.has_more).toBe(true);
    const second = await stripe.customers.listBalanceTransactions(customer, { created: { gte: 1_700_000_100 }, limit: 1, starting_after: first.data[0]?.id ?? '' });
    expect(second.data.map((t) => t.id)).toEqual([at[1_700_000_100]]);
    expect(second.has_more).toBe(false);
  });
});
