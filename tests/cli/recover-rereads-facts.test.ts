// Rule: `interlock recover` settles an effect as a service's recovery does, facts included: when the refund it finds
// landed was sent while a payment fact came for its subject (settle-5's `reread`), the pass re-reads the effect's facts
// before it exits, so what Stripe did to the refund since (here: failed) is on the receipt at once. The command's
// sender had no facts reader, so such a fact waited for a running service's reconciler, and with none running the
// receipt kept answering COMMITTED for money that had come back.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ProcessCrash, startSender, type ApprovalTerms, type Target } from '../../src/interlock.js';
import { openPipeline, type Pipeline } from '../pipeline/pipeline-support.js';
import { pay, startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';
import { runCli } from './run-cli.js';

let world: StripeWorld;
let pipeline: Pipeline;
beforeAll(async () => {
  world = await startStripeWorld();
  pipeline = await openPipeline(world.sandbox);
}, 120_000);
afterAll(async () => {
  await pipeline?.close();
  await world?.close();
});

it('a refund found landed by the command\'s pass, on a payment a fact marked, has what Stripe did since on its receipt', async () => {
  const { paymentIntent } = await pay(world.stripe, 'pm_card_visa', 5_000);
  const terms: ApprovalTerms = { id: `ap_rf_${pipeline.config.keyPrefix}`, approver: 'dana@support', capCents: 2_000, expiresAt: Date.now() + 3_600_000, maxUses: 1, scope: `payment:${paymentIntent}` };
  await pipeline.stores.approvals.grant(terms);
  // The worker dies just after Stripe made the refund, before it recorded the answer.
  const landsThenDies: Target = {
    ...pipeline.stripe.target,
    apply: async (...args) => {
      await pipeline.stripe.target.apply(...args);
      throw new ProcessCrash('killed after the send');
    },
  };
  const sender = await startSender(pipeline.stores, landsThenDies);
  const proposal = { requestId: `case-rf-${pipeline.config.keyPrefix}`, agent: 'cli-test', approval: terms.id, premises: { chargebacks: [], refunded_by_others: 0, refundable: 5_000, charge_status: 'succeeded' }, effect: { kind: 'refund', paymentIntent, amount: 2_000 } };
  await expect(sender.gate.submit(proposal)).rejects.toThrow(/killed after the send/);
  const effectId = sender.gate.effectIdOf(proposal);
  await sender.heartbeat.stop({ clear: true });
  await sender.close().catch(() => undefined);

  // While the refund was in flight a payment fact came for its payment (what note-fact-1.lua marks), and Stripe has
  // since failed the refund (the customer's card was closed).
  const partition = `payment:${paymentIntent}`;
  const redis = new Redis(pipeline.config.redisUrl);
  await redis.hset(pipeline.stores.keys.subject(partition), 'factAt', Date.now());
  await redis.quit();
  const [refund] = (await world.stripe.refunds.list({ payment_intent: paymentIntent })).data;
  expect(refund?.amount).toBe(2_000);
  await world.sandbox.control.request('POST', `/refunds/${refund?.id}/fail`, { failure_reason: 'expired_or_canceled_card' });

  const run = await runCli(['recover'], pipeline.env(), { timeoutMs: 120_000 });
  expect(run.code, run.stderr).toBe(0);
  const receipt = await pipeline.stores.journal.receipt(effectId);
  const observed = (receipt?.entries ?? []).filter((entry) => entry.kind === 'OBSERVED');
  expect(JSON.stringify(observed), JSON.stringify(receipt?.entries.map((entry) => entry.kind))).toMatch(/failed/);
}, 180_000);
