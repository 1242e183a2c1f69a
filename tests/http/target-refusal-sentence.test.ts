// Rule (core/outcomes.ts explainRecorded): REFUSED:target_error's sentence says who refused. A credit the credit
// target's own check refuses before anything is sent (an incident billing already compensated: no POST reaches Stripe)
// is told so; a credit Stripe itself refused with a 400 keeps "Stripe refused the request outright". The submit's answer,
// a repeated submit's, the effect's view (GET /v1/effects/:id and its page: summaryOf) and `interlock effect show` say
// the same, from the refusal's recorded reason. Every one of them said Stripe refused a credit that never left.
import { expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { describeEffect } from '../../src/cli/effect-command.js';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import type { TestNode } from '../support/harness.js';
import { approvalTerms } from '../support/harness.js';
import { creditSuite, logMark } from '../stripe/credit-world.js';
import { summaryOf } from '../../webhooks/api/effect-view.js';

const TIMING: Partial<Config> = { sendTimeoutMs: 2_000, settleMarginMs: 200, claimTtlMs: 2_500, heartbeatMs: 100, heartbeatTtlMs: 500, dedupMarginMs: 2_500 };
const suite = creditSuite('target-refusal-sentence', TIMING);

const BEFORE_SENDING = "The target's own check refused it before sending, so the request never reached Stripe; the reason says why.";
const STRIPE_REFUSED = 'Stripe refused the request outright; it was not sent again.';

type Answer = { effectId: string; outcome: string; sentence: string; reason?: string };

/** A credit of 1 000 cents for `incident` on a new customer (billing's compensation, if any, already read as a premise). */
async function submitCredit(node: TestNode, label: string, compensated: number, before?: () => Promise<void>) {
  const customer = (await suite.open.stripe.customers.create({ name: label })).id;
  const incident = `INC-${label}`;
  if (compensated > 0) await suite.open.stripe.customers.createBalanceTransaction(customer, { amount: -compensated, currency: 'usd', metadata: { incident } });
  const terms = approvalTerms({ id: `ap_${label}`, scope: `customer:${customer}`, capCents: 1_000, maxUses: 2 });
  await node.approvals.grant(terms);
  const proposal = { requestId: `case-${label}`, agent: 'support-bot', approval: terms.id, premises: { subscription_status: null, incident_compensation: compensated }, effect: { kind: 'credit', customer, amount: 1_000, incident } };
  await before?.();
  const since = await logMark(suite.open);
  const first = (await node.gate.submit(proposal)) as Answer;
  const posts = (await suite.open.control.requests(since)).filter((entry) => entry.method === 'POST').length;
  const again = (await node.gate.submit(proposal)) as Answer;
  const subject = `customer:${customer}`;
  const receipt = await node.journal.receipt(first.effectId);
  const view = summaryOf(first.effectId, subject, receipt?.entries ?? [], 'usd');
  const shown = await describeEffect({ stores: node.stores, journal: node.journal, approvals: node.approvals, config: node.stores.config, keyed: true }, first.effectId);
  return { first, again, posts, view, shown };
}

it('a credit refused by the target before sending is told so everywhere; one Stripe refused keeps its sentence', async () => {
  const node = await suite.start(createCreditTarget(suite.open.client, { sendTimeoutMs: suite.config.sendTimeoutMs }), 'sentences-a');

  const early = await submitCredit(node, 'refusal-sentence-compensated', 1_000);
  expect(early.posts, 'nothing was sent to Stripe').toBe(0);
  expect(early.first).toMatchObject({ outcome: 'REFUSED:target_error', sentence: BEFORE_SENDING, reason: expect.stringMatching(/^the target refused before sending: .*was already compensated/) });
  expect(early.again).toMatchObject({ outcome: 'REFUSED:target_error', sentence: BEFORE_SENDING });
  expect(early.view).toMatchObject({ outcome: 'REFUSED:target_error', sentence: BEFORE_SENDING });
  expect(early.shown).toMatchObject({ outcome: 'REFUSED:target_error', sentence: BEFORE_SENDING });

  const refused = await submitCredit(node, 'refusal-sentence-stripe-400', 0, () =>
    suite.open.control.failNext({ path: '/v1/customers/', method: 'POST', status: 400, type: 'invalid_request_error', code: 'parameter_invalid_integer', message: 'Invalid integer.' }),
  );
  expect(refused.posts, 'the credit was sent, and Stripe refused it').toBeGreaterThan(0);
  expect(refused.first).toMatchObject({ outcome: 'REFUSED:target_error', sentence: STRIPE_REFUSED, reason: expect.stringMatching(/^the target refused: Stripe refused POST/) });
  expect(refused.again).toMatchObject({ outcome: 'REFUSED:target_error', sentence: STRIPE_REFUSED });
  expect(refused.view).toMatchObject({ outcome: 'REFUSED:target_error', sentence: STRIPE_REFUSED });
  expect(refused.shown).toMatchObject({ outcome: 'REFUSED:target_error', sentence: STRIPE_REFUSED });
});
