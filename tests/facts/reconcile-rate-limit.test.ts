// Rule: the reconciler does not spend Stripe's rate limit needlessly (the limit is per account, and the gate's own
// reads and sends need it: a 429 pauses the whole effects queue, README "Rate limits"). A re-read Stripe answers 429
// ends the pass at once, without counting the effect unread; the next pass starts at that effect, and no pass on the
// schedule, in this process or another, starts before Stripe's Retry-After has passed. `interlock reconcile` waits
// the Retry-After out and goes on.
import { describe, expect, it } from 'vitest';
import { reconcileAll, startReconciler } from '../../queues/facts.js';
import { createFacts, StripeUnavailable } from '../../src/interlock.js';
import { sleep } from '../support/harness.js';
import { pay, sharedFactsRig } from './facts-rig.js';
import { commitRefunds, countingReader, HOUR, tracing, worldPerTest } from './reconcile-support.js';


function rateLimited(retryAfterMs: number | null): StripeUnavailable {
  return new StripeUnavailable('Could not read GET /v1/refunds from Stripe (rate limited (429 rate_limit: Too many requests)); nothing changed, the same read may succeed later.', { stripeStatus: 429, stripeCode: 'rate_limit', requestId: null, retryAfterMs, rateLimited: true, outcomeUnknown: false });
}

describe('against the Stripe sandbox', () => {
  const rig = sharedFactsRig();

  it('a re-read answered 429 with Retry-After: 30 ends the pass, and no pass calls Stripe again before the 30 s', async () => {
    for (let i = 0; i < 4; i += 1) {
      const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
      await rig.refund(paymentIntent, 2_000);
    }
    await rig.sandbox.control.idle();
    await rig.drained();
    await rig.sandbox.control.clearRequests();
    await rig.sandbox.control.failNext({ path: '/v1/refunds', method: 'GET', status: 429, type: 'rate_limit_error', message: 'Too many requests', retry_after: 30, count: 1 });
    const first = startReconciler(rig.stores, rig.facts, { intervalMs: HOUR, horizonMs: HOUR, atStart: false });
    let report;
    try {
      report = await first.pass();
    } finally {
      await first.close();
    }
    expect(report).toMatchObject({ unread: 0, stopped: expect.stringContaining('asked to wait 30 s') });
    // Another facts process with passes due every 100 ms: none starts while the Retry-After lasts.
    const passes: unknown[] = [];
    const other = startReconciler(rig.stores, rig.facts, { intervalMs: 100, horizonMs: HOUR, onPass: (report) => passes.push(report) });
    try {
      await sleep(700);
    } finally {
      await other.close();
    }
    expect(passes).toEqual([]);
    const log = await rig.sandbox.control.requests();
    const limited = log.find((request) => request.status === 429);
    expect(limited).toBeDefined();
    const soonAfter = log.filter((request) => request.seq > (limited?.seq ?? 0) && request.at < (limited?.at ?? 0) + 30_000);
    expect(soonAfter).toEqual([]);
  }, 90_000);
});

describe('over the gate world', () => {
  const each = worldPerTest();

  it('the pass after a rate-limited one starts at the effect Stripe rate-limited, which was not counted unread', async () => {
    const world = await each.open();
    const node = await world.node('a');
    await commitRefunds(world, node, 'pi_1', 5);
    const order = (await node.journal.watched(0, 100, null)).effectIds;
    let limits = 1;
    const tried: string[] = [];
    const facts = tracing(createFacts(node.stores, countingReader().reader), tried, (effectId) => {
      if (effectId === order[2] && limits-- > 0) throw rateLimited(null);
    });
    const reconciler = startReconciler(node.stores, facts, { intervalMs: HOUR, horizonMs: HOUR, atStart: false });
    try {
      expect(await reconciler.pass()).toMatchObject({ effects: 2, unread: 0, failures: [], stopped: expect.stringContaining('rate-limited') });
      expect(await reconciler.pass()).toMatchObject({ effects: 3, unread: 0, stopped: null });
      expect(tried).toEqual([...order.slice(0, 3), ...order.slice(2)]);
    } finally {
      await reconciler.close();
    }
  });

  it('`interlock reconcile` waits out the Retry-After, then goes on at the effect Stripe rate-limited', async () => {
    const world = await each.open();
    const node = await world.node('a');
    await commitRefunds(world, node, 'pi_1', 5);
    const order = (await node.journal.watched(0, 100, null)).effectIds;
    let limits = 1;
    const tried: string[] = [];
    const at: number[] = [];
    const facts = tracing(createFacts(node.stores, countingReader().reader), tried, (effectId) => {
      at.push(performance.now());
      if (effectId === order[1] && limits-- > 0) throw rateLimited(300);
    });
    const since = (await node.journal.serverTime()) - HOUR;
    expect(await reconcileAll(node.stores, facts, since)).toMatchObject({ effects: 5, unread: 0, stopped: null });
    expect(tried).toEqual([...order.slice(0, 2), ...order.slice(1)]);
    expect((at[2] ?? 0) - (at[1] ?? 0)).toBeGreaterThanOrEqual(295);
  });
});
