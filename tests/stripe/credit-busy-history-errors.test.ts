// Rule: README error table ("401/403 → a configuration error that sends nothing and names the key"; a premise read
// Stripe refuses the key for ends the job at once). The balance history of a customer too busy to list in one read is
// read over several reads (BalanceHistory); only an outage that passes (a read out of time, a 429, a 5xx) is "more
// balance transactions than one read could list, the next read goes on", and that wrapper keeps the 429's rate limit
// and Retry-After. A refused key part way through is thrown as it is: target_misconfigured, not a retryable
// target_unavailable (premise_read_failed, retried for 6 h).
import { expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { errorCode, slowDownOf } from '../../src/core/errors.js';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import { StripeUnavailable } from '../../src/stripe/errors.js';
import { approvalTerms } from '../support/harness.js';
import { addTransactions, creditSuite } from './credit-world.js';
import { effectIdFor } from './stripe-support.js';

const TIMING: Partial<Config> = { sendTimeoutMs: 1_500, settleMarginMs: 150, claimTtlMs: 3_000, heartbeatMs: 100, heartbeatTtlMs: 500 };
const suite = creditSuite('busy-history-errors', TIMING);
const listPath = (customer: string) => `/v1/customers/${customer}/balance_transactions`;
const KEY_REFUSED = { method: 'GET', status: 401, type: 'authentication_error', message: 'Invalid API Key provided: sk_test_****0001' } as const;
const RATE_LIMITED = { method: 'GET', status: 429, type: 'rate_limit_error', code: 'rate_limit', message: 'Too many requests hit the API too quickly.', retry_after: 30 } as const;

/** A customer whose 20 000 balance transactions take longer to list than one read has, a first read of it kept part way. */
async function busyCustomerReadPartWay(target: ReturnType<typeof createCreditTarget>, name: string) {
  const customer = (await suite.open.stripe.customers.create({ name })).id;
  addTransactions(suite.open, customer, 20_000, 3 * 86_400);
  await suite.open.control.slowDown({ path: listPath(customer), method: 'GET', ms: 20, count: 1_000_000 });
  const effect = { kind: 'credit' as const, customer, amount: 1_000, incident: `INC-${name}` };
  const first = await target.readFacts(effectIdFor(name), effect, ['incident_compensation'], { timeoutMs: 800 }).catch((error: unknown) => error);
  expect(String(first)).toMatch(/more balance transactions than one read could list/);
  return { customer, effect };
}

it('a 401 part way through a busy customer\'s history is target_misconfigured, on the read and through the gate', async () => {
  const target = createCreditTarget(suite.open.client, { sendTimeoutMs: suite.config.sendTimeoutMs });
  const node = await suite.start(target, 'busy-401');
  const { customer, effect } = await busyCustomerReadPartWay(target, 'busy-401');

  await suite.open.control.failNext({ ...KEY_REFUSED, path: listPath(customer), count: 5 });
  const read = await target.readFacts(effectIdFor('busy-401 again'), effect, ['incident_compensation'], { timeoutMs: 800 }).catch((error: unknown) => error);
  await suite.open.control.clearFaults();
  expect(errorCode(read), String(read)).toBe('target_misconfigured');

  await suite.open.control.failNext({ ...KEY_REFUSED, path: listPath(customer), count: 5 });
  const terms = approvalTerms({ scope: `customer:${customer}`, capCents: 10_000 });
  await node.approvals.grant(terms);
  const answer = await node.gate.submit({ requestId: 'case-busy-401', agent: 'support-bot', approval: terms.id, premises: { incident_compensation: 0 }, effect }).catch((error: unknown) => error);
  await suite.open.control.clearFaults();
  expect(errorCode(answer), String(answer)).toBe('target_misconfigured');
});

it("a 429 part way through is the busy customer's passing outage, carrying Stripe's Retry-After", async () => {
  const target = createCreditTarget(suite.open.client, { sendTimeoutMs: suite.config.sendTimeoutMs });
  const { customer, effect } = await busyCustomerReadPartWay(target, 'busy-429');
  await suite.open.control.failNext({ ...RATE_LIMITED, path: listPath(customer), count: 5 });
  const read = await target.readFacts(effectIdFor('busy-429 again'), effect, ['incident_compensation'], { timeoutMs: 800 }).catch((error: unknown) => error);
  await suite.open.control.clearFaults();
  expect(read).toBeInstanceOf(StripeUnavailable);
  expect(String(read)).toMatch(/more balance transactions than one read could list/);
  expect(read).toMatchObject({ rateLimited: true, retryAfterMs: 30_000, passing: true });
  expect(slowDownOf(read)).toEqual({ retryAfterMs: 30_000 });
});
