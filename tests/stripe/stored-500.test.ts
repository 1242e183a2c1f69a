// A 500 raised inside Stripe's endpoint is stored under the request's idempotency key, and Stripe replays it to every
// request with that key for 24 hours (stripe-facts §3): a resend under the effect's key can only hear that 500 again,
// and nothing moved. The rules: the effect stays open (never settled on a replayed 500, never sent under another
// key); recovery looks it up and resends with the unknown-answer backoff (the settle margin after the last such
// answer, doubled each time), so a stored 500 costs a few requests, not one per pass; once Stripe has forgotten the key,
// the next resend runs and the effect commits, once.
import { expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { approvalTerms, sleep } from '../support/harness.js';
import { gateOnStripe, pay, recoverUntilSettled } from './stripe-support.js';

const TIMING: Partial<Config> = { sendTimeoutMs: 1_000, settleMarginMs: 400, claimTtlMs: 2_500, heartbeatMs: 100, heartbeatTtlMs: 500 };

const { world, config, node } = gateOnStripe(TIMING);

it('a send answered with a stored 500 stays open through replayed 500s, resent with backoff, and commits once Stripe forgot the key', async () => {
  const { paymentIntent } = await pay(world.stripe, 'pm_card_visa', 5_000);
  const terms = approvalTerms({ id: `ap_stored_${config.keyPrefix}`, scope: `payment:${paymentIntent}`, capCents: 2_000, maxUses: 1 });
  await node.approvals.grant(terms);
  await world.sandbox.control.failNext({ path: '/v1/refunds', method: 'POST', status: 500, stored: true });
  const proposal = { requestId: `case-stored-${config.keyPrefix}`, agent: 'support-bot', approval: terms.id, premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent, amount: 2_000 } };
  const effectId = node.gate.effectIdOf(proposal);
  const answer = await node.gate.submit(proposal);
  expect(answer.outcome).toBe('IN_FLIGHT');

  // Recovery passes as often as it asks to be called again, for 4 s: every resend hears the stored 500 again.
  const posts = async () => (await world.sandbox.control.requests()).filter((request) => request.method === 'POST' && request.path === '/v1/refunds' && request.idempotency_key === effectId);
  const until = Date.now() + 4_000;
  while (Date.now() < until) {
    const report = await node.gate.recover({ only: [effectId] });
    expect(report.settled.map((item) => item.effectId)).not.toContain(effectId);
    const waiting = report.waiting.find((item) => item.effectId === effectId);
    await sleep(waiting ? Math.max(20, Math.min(waiting.until - Date.now() + 10, 300)) : 100);
  }
  const sent = await posts();
  expect(sent[0]).toMatchObject({ fault: 'fail_stored', status: 500 });
  expect(sent.slice(1).every((request) => request.status === 500 && request.fault === null), JSON.stringify(sent)).toBe(true);
  // Resends 0.4, 0.8, 1.6 s apart (then 3.2): a handful in 4 s, not one per pass.
  expect(sent.length).toBeGreaterThanOrEqual(2);
  expect(sent.length).toBeLessThanOrEqual(5);
  expect((await world.stripe.refunds.list({ payment_intent: paymentIntent })).data).toEqual([]);
  expect((await node.journal.readState(`payment:${paymentIntent}`, effectId)).state.open).toBe(true);

  // Stripe forgets the key after 24 hours: the next resend runs.
  await world.sandbox.control.ageIdempotencyKeys(24 * 3_600);
  const { outcome } = await recoverUntilSettled(node, effectId, 15_000);
  expect(outcome).toBe('COMMITTED_BY_RETRY');
  expect((await world.stripe.refunds.list({ payment_intent: paymentIntent })).data.map((refund) => [refund.amount, refund.metadata?.interlock_effect_id])).toEqual([[2_000, effectId]]);
}, 60_000);
