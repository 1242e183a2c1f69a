// Rule: P progress (DESIGN §3, §4): every valid proposal ends COMMITTED or REFUSED, so the credit target reads a busy
// customer's balance history whole over a few sends even while sends of its other credits overlap (credit-target.ts
// BalanceHistory). The kept history was taken out when a read began, so a second send (or premise read) of the same
// customer meanwhile started from page one, and whichever read was fenced last put back its shorter progress: two
// credits whose sends overlapped stalled at about 6,000 of 20,000 transactions for good, though either alone commits in
// a few sends. Now each read goes on from what is kept, and the one that got further stays kept.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import type { Effect } from '../../src/core/effects.js';
import type { SendContext } from '../../src/core/target.js';
import { addTransactions, openCreditWorld, type CreditWorld } from './credit-world.js';

let open: CreditWorld;
beforeAll(async () => {
  open = await openCreditWorld();
});
afterAll(async () => {
  await open?.close();
});

const SEND_MS = 2_000;
const id = (s: string) => createHash('sha256').update(s).digest('hex');
const ctx = (): SendContext => {
  const deadline = Date.now() + SEND_MS;
  return { timeLeftMs: () => deadline - Date.now(), beforeWrite: async () => undefined, requestId: null, neverSent: true };
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function busyCustomer(name: string): Promise<string> {
  const customer = (await open.stripe.customers.create({ name })).id;
  addTransactions(open, customer, 20_000, 2 * 24 * 3600);
  await open.control.slowDown({ path: `/v1/customers/${customer}/balance_transactions`, method: 'GET', ms: 20, count: 1_000_000 });
  return customer;
}
const credit = (customer: string, incident: string): Effect => ({ kind: 'credit', customer, amount: 500, incident }) as Effect;

it('two credits on one busy customer, their sends overlapping, both commit', async () => {
  const customer = await busyCustomer('pair');
  const target = createCreditTarget(open.client, { sendTimeoutMs: SEND_MS });
  const A = { id: id('pair-A'), effect: credit(customer, 'INC-pair-a'), done: false };
  const B = { id: id('pair-B'), effect: credit(customer, 'INC-pair-b'), done: false };
  const seen: string[] = [];
  const run = async (x: typeof A) => {
    if (x.done) return;
    try {
      await target.apply(x.id, x.effect, ctx());
      x.done = true;
    } catch (error) {
      seen.push(`${x === A ? 'A' : 'B'}:${/(\d+) read so far/.exec(String(error))?.[1] ?? String(error).slice(0, 80)}`);
    }
  };
  // One credit alone needs about four sends here; before, the pair stalled at every round whatever their number.
  for (let round = 0; round < 30 && !(A.done && B.done); round += 1) {
    // Two jobs of the worker pool, the second started a moment after the first.
    await Promise.all([run(A), sleep(100).then(() => run(B))]);
  }
  expect({ A: A.done, B: B.done }, `read so far per send: ${seen.join(' ')}`).toEqual({ A: true, B: true });
}, 180_000);
