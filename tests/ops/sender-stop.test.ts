// A sender that closes keeps its heartbeat while a send of its process is on the wire. Another worker takes a dead
// sender's effect over at once and, on a tier-2 target (queryable, no dedup on our key), trusts an empty lookup a
// settle margin after that: a heartbeat cleared under a slow send would have the effect applied a second time.
import { afterEach, expect, it } from 'vitest';
import { startSender } from '../../src/interlock.js';
import { refundProposal } from '../support/harness.js';
import { deadWorkerRig } from '../queues/dead-worker-rig.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

it('a sender closed while its tier-2 send is on the wire keeps its heartbeat until the send is answered: the next worker lands nothing more', async () => {
  const { target, stores, open, approval } = await deadWorkerRig(closers, 2);
  const sender = await startSender(stores, target);
  // Stripe takes 2 s to answer this send.
  target.inject({ kind: 'slow-send', delayMs: 2_000 });
  const proposal = refundProposal({ approval });
  const effectId = sender.gate.effectIdOf(proposal);
  const submitted = sender.gate.submit(proposal);
  const giveUp = Date.now() + 5_000;
  while (!target.sendStarts.some((start) => start.effectId === effectId) && Date.now() < giveUp) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(target.sendStarts.some((start) => start.effectId === effectId)).toBe(true);
  // The process stops under the send (a job its worker was forced to leave, a pass nobody waited for).
  await sender.close();
  const landedWhenClosed = target.landedCount(effectId);
  // The next worker recovers what looks like a dead sender's effect, after its quiet period.
  const nextStores = await open();
  const next = await startSender(nextStores, target);
  try {
    const giveUpAt = Date.now() + 5_000;
    for (;;) {
      const report = await next.gate.recover();
      if (report.waiting.length === 0 && report.skipped.length === 0 && report.unresolved.length === 0) break;
      if (Date.now() > giveUpAt) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await next.close();
    await nextStores.close();
  }
  await submitted.catch(() => undefined);
  expect(target.landedCount(effectId)).toBe(1);
  expect(landedWhenClosed).toBe(1);
  expect((await stores.journal.readState('payment:pi_1', effectId)).state.open).toBe(false);
});
