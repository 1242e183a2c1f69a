// Rule: P progress (DESIGN §3, §4): recovery settles every crashed credit; UNRESOLVED is only "retried later". The
// credit lookup told the effect's first dispatch (ReadContext.dispatchedAt) lists only the balance transactions
// created since then less the clock-skew margin (a day, `created[gte]`, stripe-facts §8.1), so a customer with tens of
// thousands of older transactions costs it one page, not hundreds, and a crashed credit that landed is found within
// the lookup's time (COMMITTED_ON_QUERY) instead of failing on every pass. A customer on a test clock, whose objects
// are created at the clock's time, is read whole.
import type Stripe from 'stripe';
import { expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { ProcessCrash, type Target } from '../../src/core/target.js';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import { approvalTerms, kill, sleep } from '../support/harness.js';
import { addTransactions, getsSince, logMark, creditSuite } from './credit-world.js';
import { effectIdFor } from './stripe-support.js';

const TIMING: Partial<Config> = { sendTimeoutMs: 2_000, settleMarginMs: 200, claimTtlMs: 4_000, heartbeatMs: 100, heartbeatTtlMs: 500, dedupMarginMs: 2_500 };
const OLDER = 20_000;
const HOUR = 60 * 60;
/** Older than the lookup's margin before the dispatch (DISPATCH_SKEW_MS, a day). */
const OLDER_AGE = 2 * 24 * HOUR;
const suite = creditSuite('bounded', TIMING);

const listPath = (customer: string) => `/v1/customers/${customer}/balance_transactions`;
const noWrites = { timeLeftMs: () => 2_000, beforeWrite: async () => undefined, requestId: null };

it('the lookup told the dispatch reads one page of a customer with 20,000 older balance transactions', async () => {
  const credits = createCreditTarget(suite.open.client, { sendTimeoutMs: 2_000 });
  const customer = (await suite.open.stripe.customers.create({ name: 'metered' })).id;
  const effectId = effectIdFor('bounded');
  const effect = { kind: 'credit' as const, customer, amount: 1_000, incident: 'INC-bounded' };
  const dispatchedAt = Date.now();
  const landed = await credits.apply(effectId, effect, noWrites);
  // Put in after the send (dated two days back), so the send's own read of the customer is not what is timed here.
  addTransactions(suite.open, customer, OLDER, OLDER_AGE);
  const since = await logMark(suite.open);
  const found = await credits.query(effectId, effect, { timeoutMs: 2_000, dispatchedAt });
  expect(found?.id).toBe(landed.id);
  expect(await getsSince(suite.open, listPath(customer), since)).toBe(1);
  expect(await getsSince(suite.open, `/v1/customers/${customer}`, since), 'the customer, read once for its test clock').toBe(1);
});

it('a customer on a test clock is read whole: its credit carries the clock\'s time, long before the dispatch', async () => {
  const credits = createCreditTarget(suite.open.client, { sendTimeoutMs: 2_000 });
  const clock = await suite.open.stripe.testHelpers.testClocks.create({ frozen_time: Math.floor(Date.now() / 1000) - 30 * 24 * HOUR });
  const customer = (await suite.open.stripe.customers.create({ name: 'on a clock', test_clock: clock.id })).id;
  const effectId = effectIdFor('clocked');
  const effect = { kind: 'credit' as const, customer, amount: 1_000, incident: 'INC-clocked' };
  const dispatchedAt = Date.now();
  const landed = await credits.apply(effectId, effect, noWrites);
  expect((landed as { created?: number }).created ?? 0).toBeLessThan(Math.floor(dispatchedAt / 1000) - 24 * HOUR);
  expect((await credits.query(effectId, effect, { timeoutMs: 2_000, dispatchedAt }))?.id).toBe(landed.id);
});

it('a credit that landed before its worker crashed, on a customer with 20,000 older transactions, settles COMMITTED_ON_QUERY in one page per lookup', async () => {
  const credits = createCreditTarget(suite.open.client, { sendTimeoutMs: suite.config.sendTimeoutMs });
  // Recovered after Stripe forgot the key (a window of 4 s, less the 2.5 s margin): recovery looks the credit up instead of resending.
  const real: Target = { ...credits, dedupWindowMs: 4_000 };
  const dying: Target = {
    ...real,
    async apply(effectId, effect, context) {
      await credits.apply(effectId, effect, context);
      throw new ProcessCrash('after the credit landed');
    },
  };
  const a = await suite.start(dying, 'bounded-a');
  const b = await suite.start(real, 'bounded-b');
  const customer = (await suite.open.stripe.customers.create({ name: 'metered, crashed' })).id;
  const terms = approvalTerms({ id: 'ap_credit_bounded', scope: `customer:${customer}`, capCents: 1_000, maxUses: 1 });
  await a.approvals.grant(terms);
  // The premise read is of the subscription only, so the balance transactions the recovery pass lists are its lookup's.
  const proposal = { requestId: 'case-credit-bounded', agent: 'support-bot', approval: terms.id, premises: { subscription_status: null }, effect: { kind: 'credit', customer, amount: 1_000, incident: 'INC-bounded-crash' } };
  const effectId = a.gate.effectIdOf(proposal);
  await expect(a.gate.submit(proposal)).rejects.toBeInstanceOf(ProcessCrash);
  await kill(a);
  // Put in after the send (dated two days back): the send's own read of every transaction is not what is timed here.
  addTransactions(suite.open, customer, OLDER, OLDER_AGE);
  await suite.open.control.ageIdempotencyKeys(2 * 24 * HOUR);
  await sleep(2_000);
  // Stripe's latency per page: the whole list (201 pages) would take 4 s, twice the lookup's time.
  await suite.open.control.slowDown({ path: listPath(customer), method: 'GET', ms: 20, count: 1_000_000 });
  const passes: { outcome: string | null; lists: number }[] = [];
  for (let i = 0; i < 8 && passes.at(-1)?.outcome == null; i += 1) {
    const since = await logMark(suite.open);
    const pass = await b.gate.recover({ only: [effectId] });
    const settled = pass.settled.find((item) => item.effectId === effectId)?.outcome ?? null;
    const unresolved = pass.unresolved.find((item) => item.effectId === effectId)?.outcome ?? null;
    passes.push({ outcome: settled ?? unresolved, lists: await getsSince(suite.open, listPath(customer), since) });
    if (settled === null) await sleep(300);
  }
  await suite.open.control.clearFaults();
  const balance = ((await suite.open.stripe.customers.retrieve(customer)) as Stripe.Customer).balance;
  expect(passes.at(-1)?.outcome, JSON.stringify(passes)).toBe('COMMITTED_ON_QUERY');
  expect(Math.max(...passes.map((pass) => pass.lists)), 'list calls of one pass').toBeLessThanOrEqual(2);
  // The older transactions went straight into the store, past the balance: the balance is the one credit.
  expect(balance, 'credited once').toBe(-1_000);
});
