// Rule: one reconciliation pass at a time across the facts processes (README "Missed webhooks": a process "that loses
// [the lease] mid-pass stops"). keepLease (queues/facts.ts) starts its clock (`keptAt = performance.now()`) only once
// the take's reply has been handled, not when the take was sent: the lease's TTL on Redis started earlier. A process
// paused (GC, a frozen VM) or whose reply came late for longer than the lease, after Redis granted it, finds
// held() true and re-reads effects at Stripe while another process, which took the lapsed lease, runs its own pass.
import { expect, it } from 'vitest';
import { startReconciler } from '../../queues/facts.js';
import { createFacts, journalOf } from '../../src/interlock.js';
import { sleep } from '../support/harness.js';
import { commitRefunds, countingReader, HOUR, tracing, worldPerTest } from './reconcile-support.js';

const each = worldPerTest();

it('a process whose lease lapsed between Redis granting it and the pass starting reads nothing', async () => {
  const world = await each.open();
  const node = await world.node('a');
  await commitRefunds(world, node, 'pi_1', 4);
  const redis = each.redis();
  const connection = redis;
  const { keys } = node.stores;
  const journal = journalOf(node.stores);
  const take = journal.takeReconcileLease.bind(journal);
  // Redis grants the lease; this process then stalls 300 ms (lease 150 ms) before it goes on, and meanwhile the lease
  // lapses and another facts process takes it for its own pass.
  journal.takeReconcileLease = async (...args) => {
    const turn = await take(...args);
    await sleep(300);
    await connection.set(keys.reconcileLease, 'the-process-that-took-over', 'PX', 10_000);
    return turn;
  };
  const tried: string[] = [];
  const reconciler = startReconciler(node.stores, tracing(createFacts(node.stores, countingReader().reader), tried), { intervalMs: HOUR, horizonMs: HOUR, atStart: false, leaseMs: 150 });
  try {
    const report = await reconciler.pass();
    expect({ tried: tried.length, lease: await connection.get(keys.reconcileLease), stopped: report.stopped }).toMatchObject({ tried: 0, lease: 'the-process-that-took-over' });
  } finally {
    await reconciler.close();
  }
});
