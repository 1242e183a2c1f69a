// Rule: an effect whose re-read fails is passed over and never holds back the ones after it (README "Missed
// webhooks"). Stripe's definite no about one object (a 404 for a payment it no longer knows: `Rejected`) is an answer,
// so any number of them in a row never stops a pass; only failures of the source itself (Stripe unavailable, its key
// refused) five in a row do, and the next pass then goes on right after the last effect the stopped one finished:
// it tries the failing run again without reading again what came before it.
import { expect, it } from 'vitest';
import { reconcileAll, startReconciler } from '../../queues/facts.js';
import { createFacts, StripeUnavailable } from '../../src/interlock.js';
import { commitRefunds, countingReader, HOUR, tracing, worldPerTest } from './reconcile-support.js';

const each = worldPerTest();


it('five effects on a payment Stripe no longer knows (404) are passed over, and the refunds after them are re-read by every pass', async () => {
  const world = await each.open();
  const node = await world.node('a');
  const gone = await commitRefunds(world, node, 'pi_gone', 5);
  const later = await commitRefunds(world, node, 'pi_live', 3);
  const { reader, calls } = countingReader(new Set(['pi_gone']));
  const tried: string[] = [];
  const reconciler = startReconciler(node.stores, tracing(createFacts(node.stores, reader), tried), { intervalMs: HOUR, horizonMs: HOUR, atStart: false });
  try {
    const reports = [await reconciler.pass(), await reconciler.pass()];
    for (const report of reports) expect(report).toMatchObject({ effects: 3, unread: 5, stopped: null, skipped: null });
    expect(reports[0]?.failures.map((failure) => failure.effectId)).toEqual(gone);
    expect(reports[0]?.failures[0]?.error).toContain('No such payment_intent');
    expect(tried).toEqual([...gone, ...later, ...gone, ...later]);
    expect(calls.refundsOf.filter((pi) => pi === 'pi_live')).toHaveLength(2 * later.length);
  } finally {
    await reconciler.close();
  }
});

it('`interlock reconcile` (reconcileAll) reads the effects after such a run and reports the refused ones as unread', async () => {
  const world = await each.open();
  const node = await world.node('a');
  await commitRefunds(world, node, 'pi_gone', 5);
  const later = await commitRefunds(world, node, 'pi_live', 3);
  const { reader, calls } = countingReader(new Set(['pi_gone']));
  const since = (await node.journal.serverTime()) - HOUR;
  expect(await reconcileAll(node.stores, createFacts(node.stores, reader), since)).toMatchObject({ effects: later.length, unread: 5, stopped: null });
  expect(calls.refundsOf.filter((pi) => pi === 'pi_live')).toHaveLength(later.length);
});

it('a pass stopped by Stripe being unavailable five times in a row is taken up again at the first failure, not at its own start', async () => {
  const world = await each.open();
  const node = await world.node('a');
  await commitRefunds(world, node, 'pi_1', 8);
  const order = (await node.journal.watched(0, 100, null)).effectIds;
  expect(order).toHaveLength(8);
  let down = true;
  const tried: string[] = [];
  const facts = tracing(createFacts(node.stores, countingReader().reader), tried, (effectId) => {
    if (down && order.indexOf(effectId) >= 3) throw new StripeUnavailable('Could not read GET /v1/refunds from Stripe (503 api_error); nothing changed, the same read may succeed later.', { stripeStatus: 503, stripeCode: null, requestId: null, retryAfterMs: null, rateLimited: false, outcomeUnknown: false });
  });
  const reconciler = startReconciler(node.stores, facts, { intervalMs: HOUR, horizonMs: HOUR, atStart: false });
  try {
    expect(await reconciler.pass()).toMatchObject({ effects: 3, unread: 5, stopped: expect.stringContaining('503 api_error') });
    down = false;
    expect(await reconciler.pass()).toMatchObject({ effects: 5, unread: 0, stopped: null });
    // The second pass began at the first effect that failed: the three read before it were not read again.
    expect(tried).toEqual([...order, ...order.slice(3)]);
  } finally {
    await reconciler.close();
  }
});
