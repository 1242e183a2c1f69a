// Rule: P progress (DESIGN §3, §4): every valid proposal ends COMMITTED or REFUSED; a send whose request never left is
// no unknown outcome. The credit's pre-send check reads every balance transaction of the customer (billing may have
// compensated the incident at any time), within the send's time less a third of the send timeout kept for the POST: a
// customer with more of them than one read can list (usage billed every hour) is read over several sends, each
// refused before the network (fenced, naming the customer and how far the read got) and going on where the last
// stopped, never run into the send deadline (an unknown outcome, resent after a back-off of up to an hour, for good).
// The history read so far is kept and topped up with what was made since, so a compensation at its far end, or made
// after it was read, still refuses the credit.
import type Stripe from 'stripe';
import { expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import { approvalTerms, sleep, type TestNode } from '../support/harness.js';
import { addTransactions, creditSuite } from './credit-world.js';

const TIMING: Partial<Config> = { sendTimeoutMs: 2_000, settleMarginMs: 200, claimTtlMs: 4_000, heartbeatMs: 100, heartbeatTtlMs: 500, dedupMarginMs: 2_500 };
const OLDER = 20_000;
const OLDER_AGE = 2 * 24 * 60 * 60;
const suite = creditSuite('busy-customer', TIMING);
const listPath = (customer: string) => `/v1/customers/${customer}/balance_transactions`;

/** Recovery passes over `effectId` until it settles (at most `n`), and what each pass said that did not settle it. */
async function settle(node: TestNode, effectId: string, n: number): Promise<{ settled: string | null; seen: string[] }> {
  const seen: string[] = [];
  for (let i = 0; i < n; i += 1) {
    const pass = await node.gate.recover({ only: [effectId] });
    const settled = pass.settled.find((item) => item.effectId === effectId)?.outcome ?? null;
    if (settled !== null) return { settled, seen };
    const open = pass.unresolved.find((item) => item.effectId === effectId);
    seen.push((open === undefined ? undefined : `${open.outcome}: ${open.error}`) ?? pass.waiting.find((item) => item.effectId === effectId)?.reason ?? pass.skipped.find((item) => item.effectId === effectId)?.reason ?? 'none');
    await sleep(500);
  }
  return { settled: null, seen };
}

/** A customer with `OLDER` balance transactions (1-cent usage debits) and Stripe's latency on their list: the whole list (200 pages) takes 4 s, twice the send's time. */
async function busyCustomer(name: string, before?: (customer: string) => Promise<void>): Promise<string> {
  const customer = (await suite.open.stripe.customers.create({ name })).id;
  await before?.(customer);
  addTransactions(suite.open, customer, OLDER, OLDER_AGE);
  await suite.open.control.slowDown({ path: listPath(customer), method: 'GET', ms: 20, count: 1_000_000 });
  return customer;
}

async function propose(node: TestNode, customer: string, name: string, incident: string) {
  const terms = approvalTerms({ id: `ap_${name}`, scope: `customer:${customer}`, capCents: 1_000, maxUses: 1 });
  await node.approvals.grant(terms);
  const proposal = { requestId: `case-${name}`, agent: 'support-bot', approval: terms.id, premises: { subscription_status: null }, effect: { kind: 'credit', customer, amount: 1_000, incident } };
  const effectId = node.gate.effectIdOf(proposal);
  const answer = await node.gate.submit(proposal).catch((error: unknown) => ({ outcome: `threw ${String(error)}` }));
  return { effectId, first: JSON.stringify(answer).slice(0, 300), outcome: answer.outcome };
}

/** Its outcome: the submit's when the submit settled it, else recovery's (`n` passes at most). */
async function outcomeOf(node: TestNode, proposed: { effectId: string; outcome: string }, n: number): Promise<{ settled: string | null; seen: string[] }> {
  if (/^(COMMITTED|REFUSED)/.test(proposed.outcome)) return { settled: proposed.outcome, seen: [] };
  return settle(node, proposed.effectId, n);
}

const balanceOf = async (customer: string) => ((await suite.open.stripe.customers.retrieve(customer)) as Stripe.Customer).balance;

it('a new credit for a customer with 20,000 older balance transactions commits once they are read, its earlier sends fenced, none an unknown outcome', async () => {
  const node = await suite.start(createCreditTarget(suite.open.client, { sendTimeoutMs: suite.config.sendTimeoutMs }), 'busy-new');
  const customer = await busyCustomer('busy, new credit');
  const proposed = await propose(node, customer, 'busy_new', 'INC-busy-new');
  await sleep(1_000);
  const result = await outcomeOf(node, proposed, 12);
  await suite.open.control.clearFaults();
  expect(result.settled, `${proposed.first} then ${JSON.stringify(result.seen)}`).toMatch(/^COMMITTED/);
  expect(result.seen.filter((said) => /send deadline|no definite answer/.test(said)), 'no send ran into its deadline').toEqual([]);
  expect(result.seen.every((said) => said.includes(customer) && /read so far/.test(said)), `each fenced send names the customer and how far the read got: ${JSON.stringify(result.seen)}`).toBe(true);
  expect(await balanceOf(customer), "one credit (the usage debits, put in the store, move no balance)").toBe(-1_000);
});

it("billing's credit for the incident at the far end of a busy customer's history, or made after it was read, refuses the credit", async () => {
  const node = await suite.start(createCreditTarget(suite.open.client, { sendTimeoutMs: suite.config.sendTimeoutMs }), 'busy-billed');
  // Made first, so it lists last: behind all 20,000 usage debits.
  const customer = await busyCustomer('busy, billed', async (id) => {
    await suite.open.stripe.customers.createBalanceTransaction(id, { amount: -1_000, currency: 'usd', description: 'SLA credit', metadata: { incident: 'INC-busy-old' } });
  });
  const old = await propose(node, customer, 'busy_old', 'INC-busy-old');
  const far = await outcomeOf(node, old, 12);
  expect(far.settled, `${old.first} then ${JSON.stringify(far.seen)}`).toMatch(/^REFUSED/);
  expect(far.seen.length, 'fenced before its read reached the far end').toBeGreaterThan(0);
  expect(far.seen.filter((said) => /send deadline|no definite answer/.test(said))).toEqual([]);
  // The history is read whole now and kept: billing's credit made since is in its top-up.
  await suite.open.stripe.customers.createBalanceTransaction(customer, { amount: -1_000, currency: 'usd', description: 'SLA credit', metadata: { incident: 'INC-busy-new-sla' } });
  const later = await propose(node, customer, 'busy_later', 'INC-busy-new-sla');
  const made = await outcomeOf(node, later, 12);
  await suite.open.control.clearFaults();
  expect(made.settled, `${later.first} then ${JSON.stringify(made.seen)}`).toMatch(/^REFUSED/);
  expect(await balanceOf(customer), "only billing's two credits").toBe(-2_000);
});
