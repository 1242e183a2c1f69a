// Rule: a facts process that (re)starts catches up on what it missed while it was down (README "Post-send facts": the
// reconciler re-reads "at start"). `stripe listen` never re-sends an event it could not forward, so the pass at start
// runs whenever the last pass ran (the interval holds back only the passes after it); it still takes the lease, and
// when another process holds it, runs right after that pass instead of skipping its turn, unless a pass began after it
// asked (that one read Stripe after anything missed). It reads back to the horizon as of the last pass's end, so the
// effects that left the horizon while no pass ran (the whole deployment down) are re-read once more.
import { vi, expect, it } from 'vitest';
import { startReconciler, type ReconcileReport } from '../../queues/facts.js';
import { createFacts, reconcileLease, StripeUnavailable, type Stores } from '../../src/interlock.js';
import { commitRefunds, committedWhileDown, countingReader, HOUR, tracing, until, worldPerTest } from './reconcile-support.js';

const each = worldPerTest();

/** Every message `stores` logs from now, whatever the logger's level, as "level: message". */
function logged(stores: Stores): string[] {
  const messages: string[] = [];
  for (const level of ['debug', 'info', 'warn', 'error'] as const) {
    vi.spyOn(stores.logger, level).mockImplementation((...args: unknown[]) => {
      const message = args.find((arg): arg is string => typeof arg === 'string');
      if (message !== undefined) messages.push(`${level}: ${message}`);
    });
  }
  return messages;
}

const SKIPPED = /^\w+: reconciliation pass skipped/;
const WAITING = /^info: reconciliation pass at start waits its turn/;

it('the pass at start runs though the last pass began moments ago', async () => {
  const world = await each.open();
  const a = await world.node('a');
  const b = await world.node('b');
  const ids = await commitRefunds(world, a, 'pi_1', 2);
  // The process before the restart made a pass (it then died): the last pass began less than the interval ago.
  const before = startReconciler(a.stores, createFacts(a.stores, countingReader().reader), { intervalMs: HOUR, horizonMs: HOUR, atStart: false });
  expect(await before.pass()).toMatchObject({ effects: 2, skipped: null });
  await before.close();

  const logs = logged(b.stores);
  const tried: string[] = [];
  const passes: ReconcileReport[] = [];
  const restarted = startReconciler(b.stores, tracing(createFacts(b.stores, countingReader().reader), tried), { intervalMs: HOUR, horizonMs: HOUR, onPass: (report) => passes.push(report) });
  try {
    await until(() => passes.length > 0 || logs.some((message) => SKIPPED.test(message)));
    expect(logs.filter((message) => SKIPPED.test(message))).toEqual([]);
    expect(passes).toMatchObject([{ effects: 2, stopped: null }]);
    expect(tried).toEqual(ids);
  } finally {
    await restarted.close();
  }
});

it('when another process holds the lease, the pass at start waits its turn and runs right after that pass', async () => {
  const world = await each.open();
  const a = await world.node('a');
  const ids = await commitRefunds(world, a, 'pi_1', 2);
  // Another facts process is in the middle of a pass, begun before this one started.
  const lease = reconcileLease(a.stores);
  const held = await lease.take('another-process', 60_000, null);
  expect(held).toMatchObject({ status: 'OK' });
  if (held.status !== 'OK') return;

  const logs = logged(a.stores);
  const tried: string[] = [];
  const passes: ReconcileReport[] = [];
  const restarted = startReconciler(a.stores, tracing(createFacts(a.stores, countingReader().reader), tried), { intervalMs: HOUR, horizonMs: HOUR, onPass: (report) => passes.push(report) });
  try {
    await until(() => logs.some((message) => SKIPPED.test(message) || WAITING.test(message)));
    expect(logs.filter((message) => SKIPPED.test(message))).toEqual([]);
    expect(tried).toEqual([]);
    // A pass asked for meanwhile is skipped, and says so where operators look (info, not debug).
    expect(await restarted.pass()).toMatchObject({ effects: 0, skipped: expect.stringContaining('holds the lease') });
    expect(logs).toContain('info: reconciliation pass skipped');
    // The other process's pass ends (it began before this process asked): the pass at start runs now.
    expect(await lease.end('another-process', { position: null, failedInARow: 0 }, held.now, 0)).toBe(true);
    await until(() => passes.length > 0);
    expect(passes).toMatchObject([{ effects: 2, stopped: null }]);
    expect(tried).toEqual(ids);
  } finally {
    await restarted.close();
  }
});

it('a pass another process began after the pass at start asked counts as its catch-up (one pass, not one each)', async () => {
  const world = await each.open();
  const a = await world.node('a');
  await commitRefunds(world, a, 'pi_1', 2);
  const lease = reconcileLease(a.stores);
  expect(await lease.take('another-process', 60_000, null)).toMatchObject({ status: 'OK' });

  const logs = logged(a.stores);
  const tried: string[] = [];
  const restarted = startReconciler(a.stores, tracing(createFacts(a.stores, countingReader().reader), tried), { intervalMs: HOUR, horizonMs: HOUR });
  try {
    await until(() => logs.some((message) => SKIPPED.test(message) || WAITING.test(message)));
    expect(logs.filter((message) => SKIPPED.test(message))).toEqual([]);
    // The pass that ends now began after this process asked (another process restarted too, and took its turn first).
    const began = (await a.journal.serverTime()) + 1;
    expect(await lease.end('another-process', { position: null, failedInARow: 0 }, began, 0)).toBe(true);
    await until(() => logs.some((message) => message.startsWith('info: reconciliation pass at start not needed')));
    expect(tried).toEqual([]);
  } finally {
    await restarted.close();
  }
});

it('after the deployment was down for hours, the pass at start re-reads the effects that left the horizon meanwhile', async () => {
  // The passes missed while the deployment was down would have re-read them, and the passes from now would not.
  const { a, ids } = await committedWhileDown(each, 2);

  const tried: string[] = [];
  const passes: ReconcileReport[] = [];
  const restarted = startReconciler(a.stores, tracing(createFacts(a.stores, countingReader().reader), tried), { intervalMs: HOUR / 4, horizonMs: HOUR, onPass: (report) => passes.push(report) });
  try {
    await until(() => passes.length > 0);
    expect(tried).toEqual(ids);
  } finally {
    await restarted.close();
  }
  // A pass after it reads the horizon only.
  const later = startReconciler(a.stores, tracing(createFacts(a.stores, countingReader().reader), tried), { intervalMs: HOUR / 4, horizonMs: HOUR, atStart: false });
  try {
    expect(await later.pass()).toMatchObject({ effects: 0, skipped: null });
  } finally {
    await later.close();
  }
});

// A catch-up that Stripe's rate limit stopped part way keeps its window: the passes after it go on from where it
// stopped over the same window, until one has read all of it, so no effect that left the horizon is dropped.
it('a catch-up stopped by a rate limit part way is gone on with over its own window until all of it is read', async () => {
  const { a, ids } = await committedWhileDown(each, 4);
  let limited = false;
  const tried: string[] = [];
  const passes: ReconcileReport[] = [];
  const facts = tracing(createFacts(a.stores, countingReader().reader), tried, (effectId) => {
    if (effectId === ids[1] && !limited) {
      limited = true;
      throw new StripeUnavailable('Could not read GET /v1/refunds from Stripe (rate limited (429 rate_limit)); nothing changed.', { stripeStatus: 429, stripeCode: 'rate_limit', requestId: null, retryAfterMs: null, rateLimited: true, outcomeUnknown: false });
    }
  });
  const reconciler = startReconciler(a.stores, facts, { intervalMs: HOUR, horizonMs: HOUR, onPass: (report) => passes.push(report) });
  try {
    await until(() => passes.length > 0);
    expect(passes[0]?.stopped ?? '').toContain('rate-limited');
    for (let i = 0; i < 3; i += 1) await reconciler.pass();
  } finally {
    await reconciler.close();
  }
  expect(new Set(tried)).toEqual(new Set(ids));
});
