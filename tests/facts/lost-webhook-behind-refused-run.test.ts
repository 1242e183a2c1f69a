// Rule (DESIGN §3 F, §8; README "Missed webhooks"): a committed refund's receipt ends agreeing with the final money at
// Stripe within the reconciler's horizon when its webhooks are lost, and an effect whose re-read fails is passed over,
// so it never holds back the ones after it. Here the re-reads of five earlier refunds fail for good (their payments
// answer 404, as for a payment Stripe no longer knows: the sandbox answers empty lists for unknown payments, so the
// real reader is wrapped), and a refund committed after them fails at Stripe with every webhook lost: the scheduled
// pass still brings its receipt to not_returned.
import { expect, it } from 'vitest';
import { startReconciler } from '../../queues/facts.js';
import { createFacts, Rejected, stripeSide, type StripeReader } from '../../src/interlock.js';
import { pay, sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

it('a refund that failed with its webhooks lost reaches not_returned at the next pass, whatever the re-reads of earlier effects answer', async () => {
  const gone = new Set<string>();
  for (let i = 0; i < 5; i += 1) {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    await rig.refund(paymentIntent, 2_000);
    gone.add(paymentIntent);
  }
  await rig.sandbox.control.idle();
  await rig.drained();
  const real = stripeSide(rig.config).reader;
  const refuse = (pi: string) => {
    if (gone.has(pi)) throw new Rejected(`No such payment_intent: '${pi}'`, { code: 'resource_missing', status: 404 });
  };
  const reader: StripeReader = { ...real, refundsOf: async (pi) => (refuse(pi), real.refundsOf(pi)), disputesOf: async (pi) => (refuse(pi), real.disputesOf(pi)) };
  const facts = createFacts(rig.stores, reader);
  await rig.sandbox.control.addRule({ action: 'drop', count: 10_000 });
  try {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const refundId = (await rig.receipt(effectId)).evidence as string;
    await rig.sandbox.control.request('POST', `/refunds/${refundId}/fail`, { failure_reason: 'expired_or_canceled_card' });
    await rig.sandbox.control.idle();
    await rig.drained();
    expect((await rig.stripe.refunds.retrieve(refundId)).status).toBe('failed');
    expect((await rig.receipt(effectId)).finalMoney.status).toBe('returned');

    const reconciler = startReconciler(rig.stores, facts, { intervalMs: 3_600_000, horizonMs: 3_600_000, atStart: false });
    let report;
    try {
      report = await reconciler.pass();
    } finally {
      await reconciler.close();
    }
    expect(report).toMatchObject({ unread: gone.size, stopped: null });
    expect((await rig.receipt(effectId)).finalMoney.status).toBe('not_returned');
  } finally {
    await rig.sandbox.control.clearRules();
  }
}, 90_000);
