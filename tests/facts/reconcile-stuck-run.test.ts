// Rule: "An effect whose re-read fails is counted as unread, logged and passed over, so it never holds back the ones
// after it" (README "Missed webhooks"); every effect settled within the horizon is re-read by the scheduled passes.
// A payment (or customer) whose refund/dispute/balance list cannot be paged within the read's 10 s budget fails every
// re-read with StripeUnavailable ("the read's time ran out"), which the pass counts as the source failing. Five
// refunds on it in a row stop every pass at the same place (the next pass "takes them up again at the first of
// them"), so the effects after them are never re-read again, pass after pass: the case a8f7325 fixed for a 404
// remains for any per-object failure that is not a Rejected.
import { expect, it } from 'vitest';
import { startReconciler } from '../../queues/facts.js';
import { createFacts, StripeUnavailable } from '../../src/interlock.js';
import { commitRefunds, countingReader, HOUR, tracing, worldPerTest } from './reconcile-support.js';

const each = worldPerTest();

it.each([5, 10])('%i refunds on one payment whose lists time out every time do not hold back the effects after them for ever', async (failing) => {
  const world = await each.open();
  const node = await world.node('a');
  const big = await commitRefunds(world, node, 'pi_big', failing);
  const later = await commitRefunds(world, node, 'pi_ok', 3);
  const tried: string[] = [];
  const facts = tracing(createFacts(node.stores, countingReader().reader), tried, (effectId) => {
    if (big.includes(effectId)) throw new StripeUnavailable("Could not read GET /v1/refunds?payment_intent=pi_big from Stripe: the read's time ran out; the same read may succeed later.", { stripeStatus: null, stripeCode: null, requestId: null, retryAfterMs: null, rateLimited: false, outcomeUnknown: false });
  });
  const reconciler = startReconciler(node.stores, facts, { intervalMs: HOUR, horizonMs: HOUR, atStart: false });
  const stops: (string | null)[] = [];
  try {
    // Ten passes: 2.5 hours of passes at the default 15 min interval.
    for (let i = 0; i < 10; i += 1) stops.push((await reconciler.pass()).stopped);
  } finally {
    await reconciler.close();
  }
  const reread = later.filter((effectId) => tried.includes(effectId));
  expect(reread, `effects after the slow payment re-read in 10 passes (passes stopped: ${stops.filter((s) => s !== null).length})`).toEqual(later);
});
