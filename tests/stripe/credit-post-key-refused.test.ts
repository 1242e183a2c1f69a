// Rule: README error table ("401/403 → a configuration error that sends nothing and names the key"; src/stripe/errors.ts
// "a send (write) → target_misconfigured: fix the config"). Stripe answers a refused key before anything runs and
// stores nothing under the Idempotency-Key (stripe-facts §3), so a 401 on the credit's POST is a send that did nothing
// (fenced, carrying the error): the submit throws target_misconfigured, not IN_FLIGHT "outcome unknown", and
// recovery's resend answered so is named UNRESOLVED:target_misconfigured; once the key is fixed the credit lands once.
import type Stripe from 'stripe';
import { expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { errorCode } from '../../src/core/errors.js';
import { approvalTerms } from '../support/harness.js';
import { gateOnStripe, recoverUntilSettled, sleep } from './stripe-support.js';

const TIMING: Partial<Config> = { sendTimeoutMs: 1_000, settleMarginMs: 150, claimTtlMs: 2_000, heartbeatMs: 100, heartbeatTtlMs: 500 };

const { world, node } = gateOnStripe({ ...TIMING, keyPrefix: `t-credit-post-401-${Math.random().toString(36).slice(2, 10)}` }, { kind: 'credit', workerId: 'credit-post-401' });

it('a 401 on the credit POST: target_misconfigured, nothing landed; recovery names it, and sends it once the key works', async () => {
  const customer = (await world.stripe.customers.create({ name: 'post 401' })).id;
  const terms = approvalTerms({ scope: `customer:${customer}`, capCents: 10_000 });
  await node.approvals.grant(terms);
  const proposal = { requestId: `case-${customer}`, agent: 'support-bot', approval: terms.id, premises: { incident_compensation: 0 }, effect: { kind: 'credit', customer, amount: 700, incident: 'INC-post-401' } };
  const effectId = node.gate.effectIdOf(proposal);
  const refused = { path: `/v1/customers/${customer}/balance_transactions`, method: 'POST', status: 401, type: 'authentication_error', message: 'Expired API Key provided: sk_test_****0001' } as const;

  await world.sandbox.control.failNext({ ...refused, count: 1 });
  const answer = await node.gate.submit(proposal).catch((error: unknown) => error);
  await world.sandbox.control.clearFaults();
  expect(errorCode(answer), JSON.stringify(answer)).toBe('target_misconfigured');
  expect((answer as Error).message).toContain('STRIPE_SECRET_KEY');
  expect((await world.stripe.customers.listBalanceTransactions(customer)).data).toHaveLength(0);

  // Recovery resends under the same key while Stripe still refuses it: named for the key, nothing landed.
  await world.sandbox.control.failNext({ ...refused, count: 100 });
  let unresolved: string | null = null;
  for (let pass = 0; pass < 30 && unresolved === null; pass += 1) {
    const report = await node.gate.recover({ only: [effectId] });
    expect(report.settled.filter((item) => item.effectId === effectId)).toEqual([]);
    unresolved = report.unresolved.find((item) => item.effectId === effectId)?.outcome ?? null;
    if (unresolved === null) await sleep(150);
  }
  await world.sandbox.control.clearFaults();
  expect(unresolved).toBe('UNRESOLVED:target_misconfigured');

  const { outcome } = await recoverUntilSettled(node, effectId, 15_000);
  expect(outcome).toMatch(/^COMMITTED/);
  expect(((await world.stripe.customers.retrieve(customer)) as Stripe.Customer).balance, 'credited once').toBe(-700);
});
