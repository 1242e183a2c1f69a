// Rule: a SIGTERM stops taking work, lets sends in progress finish within their deadline, and exits 0 (README "Running
// it"); the overdue bound (the send deadline plus STOP_MARGIN_MS, then exit 1) is for a part that does not answer. A
// facts process whose reconciliation pass is re-reading effects at a slow Stripe sends nothing: its stop ends the pass
// where it is, without waiting for its Stripe reads, and exits 0, saying the pass was cut short.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openPipeline, spawnWorker, type Pipeline } from '../pipeline/pipeline-support.js';
import { pay, sleep, startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';

let world: StripeWorld;
let pipeline: Pipeline;
beforeAll(async () => {
  world = await startStripeWorld();
  pipeline = await openPipeline(world.sandbox);
});
afterAll(async () => {
  await pipeline?.close();
  await world?.close();
});

it('SIGTERM to serve --roles facts while its reconciliation pass reads a slow Stripe: the pass is cut short and the process exits 0', async () => {
  // Six committed refunds, within the reconciler's horizon.
  const worker = spawnWorker(pipeline.env(), ['serve', '--roles', 'worker']);
  const effects: string[] = [];
  try {
    await worker.ready;
    for (let i = 0; i < 6; i += 1) {
      const { paymentIntent } = await pay(world.stripe, 'pm_card_visa', 5_000);
      const approval = `ap_stoprc${i}_${pipeline.config.keyPrefix}`;
      await pipeline.stores.approvals.grant({ id: approval, approver: 'dana@support', capCents: 2_000, expiresAt: Date.now() + 3_600_000, maxUses: 1, scope: `payment:${paymentIntent}` });
      effects.push(await pipeline.propose({ requestId: `case-stoprc${i}-${pipeline.config.keyPrefix}`, approval, effect: { kind: 'refund', paymentIntent, amount: 2_000 } }));
    }
    await pipeline.untilSettled(effects, 60_000);
  } finally {
    await worker.stop(15_000);
  }
  // Stripe now answers every read after 20 s: each re-read runs to its 10 s read timeout, and a pass stops only after
  // five such failures in a row (50 s). A send deadline of 5 s puts the overdue bound at 20 s, well under that.
  await world.sandbox.control.slowDown({ method: 'GET', ms: 20_000, count: 200 });
  const facts = spawnWorker(pipeline.env({ INTERLOCK_SEND_TIMEOUT_MS: '5000' }), ['serve', '--roles', 'facts']);
  try {
    await facts.ready;
    await sleep(500);
    facts.child.kill('SIGTERM');
    const exit = await Promise.race([facts.exited, sleep(90_000).then(() => 'still running' as const)]);
    const last = facts.logs().trim().split('\n').slice(-3).map((line) => line.slice(0, 400)).join('\n');
    expect(exit, last).toEqual({ code: 0, signal: null });
    expect(facts.logs()).toContain('"msg":"reconciliation pass cut short by the stop; the next pass goes on from the last effect it finished"');
    expect(facts.logs()).not.toContain('stopping took longer than');
  } finally {
    await facts.stop(2_000);
  }
}, 240_000);
