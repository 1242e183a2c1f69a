// Rule: waiting on a re-decision (a proposal recorded under the same request id after the first was refused) answers
// how that proposal settled, never with the refused proposal's answer. The refusal is in the journal before BullMQ
// completes the refused proposal's job, so a caller who read it and decided again can be waiting when that job's
// completion comes: it must not end the wait.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { createEffectsQueue, startEffectsWorker } from '../../queues/effects.js';
import { createMemoryTarget, openStores, settledOutcome, startSender } from '../../src/interlock.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig, testKey } from '../support/harness.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/**
 * A refund decided on facts that no longer hold, proposed through a real queue and worker, and refused; the worker
 * holds that refusal's job between the refusal (written) and its completion until `releaseRefused` (onAnswer is
 * awaited before the job completes; in production that window is a Redis round trip or two), and, with
 * `holdCommitted`, each COMMITTED answer's job until `releaseCommitted`. The caller has heard the refusal from the
 * journal. `again` decides the request again, on fresh facts under a second approval.
 */
async function refusedAndHeld(options: { requestId: string; concurrency: number; holdCommitted: boolean }) {
  const config = testConfig({ keyPrefix: `t-redecide-${randomBytes(5).toString('hex')}` });
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  const sender = await startSender(stores, target);
  const queue = createEffectsQueue(stores);
  let releaseRefused: () => void = () => undefined;
  const refusedHeld = new Promise<void>((resolve) => (releaseRefused = resolve));
  let releaseCommitted: () => void = () => undefined;
  const committedHeld = new Promise<void>((resolve) => (releaseCommitted = resolve));
  let refused = false;
  const worker = startEffectsWorker(stores, sender, {
    concurrency: options.concurrency,
    onAnswer: async (answer) => {
      if (answer.outcome === 'REFUSED:stale_premise' && !refused) {
        refused = true;
        await refusedHeld;
      } else if (options.holdCommitted && answer.outcome.startsWith('COMMITTED')) {
        await committedHeld;
      }
    },
  });
  closers.push(async () => {
    releaseRefused();
    releaseCommitted();
    await worker.close(true);
    await queue.close();
    await sender.close();
    await stores.close();
    await removePrefixes([config.keyPrefix]);
  });
  const first = approvalTerms();
  const second = approvalTerms();
  await stores.approvals.grant(first);
  await stores.approvals.grant(second);
  const stale = refundProposal({ requestId: options.requestId, approval: first.id, premises: { chargebacks: [], refunded_by_others: 500 } });
  const proposed = await queue.propose(stale);
  await expect.poll(() => refused, { timeout: 10_000 }).toBe(true);
  // Heard from the journal: its job has not completed yet.
  expect(await queue.waitFor(proposed.effectId, 10_000)).toMatchObject({ outcome: 'REFUSED:stale_premise' });
  const again = () => queue.propose({ ...stale, approval: second.id, premises: { chargebacks: [], refunded_by_others: 0 } });
  return { target, stores, queue, effectId: proposed.effectId, again, releaseRefused, releaseCommitted };
}

it("a re-decision waited on before the refused proposal's job completed is answered with its own outcome", async () => {
  const { target, queue, effectId, again, releaseRefused } = await refusedAndHeld({ requestId: 'case-redecide', concurrency: 1, holdCommitted: false });
  // The caller decides again on fresh facts, and waits for that decision.
  expect(await again()).toMatchObject({ effectId, status: 'recorded', proposals: 2, queued: true });
  const waiting = queue.waitFor(effectId, 15_000);
  releaseRefused();

  expect((await waiting)?.outcome).toBe('COMMITTED');
  expect(target.landedCount(effectId)).toBe(1);
});

// The refused proposal's job can complete after the re-decision committed (its completion a Redis round trip late):
// the waiter is answered with the journal's outcome, not that job's refusal.
it("a re-decision that committed is not answered by the refused proposal's late completion", async () => {
  const { target, stores, queue, effectId, again, releaseRefused, releaseCommitted } = await refusedAndHeld({ requestId: 'case-redecide-late', concurrency: 2, holdCommitted: true });
  // The re-decision's send takes a moment, so its caller is waiting before it commits.
  target.inject({ kind: 'slow-send', delayMs: 1_500 });
  expect(await again()).toMatchObject({ effectId, proposals: 2, queued: true });
  const waiting = queue.waitFor(effectId, 20_000);
  await expect.poll(async () => String(await settledOutcome(stores, effectId)).startsWith('COMMITTED'), { timeout: 15_000 }).toBe(true);
  // The refused proposal's job completes now; the re-decision's job after.
  releaseRefused();
  setTimeout(releaseCommitted, 1_000);

  expect(target.landedCount(effectId)).toBe(1);
  expect((await waiting)?.outcome).toBe(await settledOutcome(stores, effectId));
  expect((await waiting)?.outcome).toMatch(/^COMMITTED/);
});
