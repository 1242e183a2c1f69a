// Rule: a 429 holds the scheduled reconciliation passes back for Stripe's Retry-After and no longer (README "Missed
// webhooks": "no pass on the schedule ... starts before Stripe's Retry-After ... has passed"); whatever a Retry-After
// header says, the schedule must come back by itself. The header parser (src/stripe/errors.ts retryAfterMs) turned an
// over-long number of seconds into Infinity, slowDownOf took it, and end-reconcile-pass-2.lua stored notBefore = "inf"
// in the shared cursor: every later scheduled pass of every facts process, restarts included, was refused for ever.
// Now the parser obeys at most 15 minutes, and a non-finite wait reads as none named (the backoff holds).
import { expect, it } from 'vitest';
import { startReconciler, type ReconcileReport } from '../../queues/facts.js';
import { createFacts, reconcileLease, StripeUnavailable } from '../../src/interlock.js';
import { retryAfterMs } from '../../src/stripe/errors.js';
import { sleep } from '../support/harness.js';
import { commitRefunds, countingReader, HOUR, tracing, worldPerTest } from './reconcile-support.js';

const each = worldPerTest();

it('one 429 whose Retry-After is absurdly long does not stop the scheduled passes for ever', async () => {
  const world = await each.open();
  const node = await world.node('a');
  await commitRefunds(world, node, 'pi_1', 3);
  const redis = each.redis();
  // The header parser obeys at most 15 minutes, however many digits or however far a date: never Infinity.
  expect(retryAfterMs({ 'retry-after': '9'.repeat(400) }, Date.now())).toBe(15 * 60_000);
  expect(retryAfterMs({ 'retry-after': 'Fri, 31 Dec 9999 23:59:59 GMT' }, Date.now())).toBe(15 * 60_000);
  // An error that carries Infinity anyway (another adapter) is read as naming no wait: the backoff holds instead.
  const wait = Infinity;
  let limits = 1;
  const facts = tracing(createFacts(node.stores, countingReader().reader), [], () => {
    if (limits-- > 0) {
      throw new StripeUnavailable('Could not read GET /v1/refunds from Stripe (rate limited (429 rate_limit: Too many requests))', { stripeStatus: 429, stripeCode: 'rate_limit', requestId: null, retryAfterMs: wait, rateLimited: true, outcomeUnknown: false });
    }
  });
  const first = startReconciler(node.stores, facts, { intervalMs: HOUR, horizonMs: HOUR, atStart: false });
  try {
    expect(await first.pass()).toMatchObject({ stopped: expect.stringContaining('rate-limited') });
  } finally {
    await first.close();
  }
  const stored = await redis.hget(node.stores.keys.reconcileCursor, 'notBefore');
  // A facts process (re)started afterwards, passes due every 100 ms: none ever runs.
  const passes: ReconcileReport[] = [];
  const later = startReconciler(node.stores, facts, { intervalMs: 100, horizonMs: HOUR, onPass: (report) => passes.push(report) });
  try {
    await sleep(node.stores.config.rateLimitBackoffMs + 800);
  } finally {
    await later.close();
  }
  const take = await reconcileLease(node.stores).take('probe', 1_000, 50).then((turn) => turn.status, (error: unknown) => String(error));
  expect(passes.length, `scheduled passes after the 429 (cursor notBefore = ${stored}; a scheduled take now answers: ${take})`).toBeGreaterThan(0);
});
