// Rule: refunds queued behind another refund of their payment (REFUNDS_HOLD) whose send is stuck do not keep their
// worker's slots for a whole send timeout: each waits a few seconds at most (HOLD_WAIT_MS), answers IN_FLIGHT and is
// retried later, so an effect on another payment queued behind them is judged within seconds, not after the stuck
// send's timeout (30 s for Stripe).
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { createEffectsQueue, startEffectsWorker } from '../../queues/effects.js';
import { createMemoryTarget, openStores, startSender } from '../../src/interlock.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig, testKey } from '../support/harness.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

const SEND_TIMEOUT_MS = 30_000;

it('two refunds waiting behind a stuck refund of their payment leave a two-slot worker free for a refund of another payment', async () => {
  // The stuck holder keeps its claim for the whole test; sends may take as long as Stripe's.
  const config = testConfig({ keyPrefix: `t-holdslots-${randomBytes(5).toString('hex')}`, claimTtlMs: 90_000, sendTimeoutMs: SEND_TIMEOUT_MS, dedupMarginMs: 60_000 });
  const key = testKey().key;
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: SEND_TIMEOUT_MS, movedBySends: ['refunded_by_others'] });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  target.world.set('payment:pi_2', { chargebacks: [], refunded_by_others: 0 });
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: key });
  const sender = await startSender(stores, target, { workerId: 'service' });
  const queue = createEffectsQueue(stores);
  const worker = startEffectsWorker(stores, sender, { concurrency: 2 });
  // Another worker process, alive, whose send of refund H never came back: H holds pi_1's refunds while it beats.
  const holderStores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: key });
  const holder = await startSender(holderStores, target, { workerId: 'holder' });
  closers.push(async () => {
    await worker.close(true);
    await queue.close();
    await sender.close();
    await holder.close();
    await holderStores.close();
    await stores.close();
    await removePrefixes([config.keyPrefix]);
  });
  const [h, j1, j2] = [approvalTerms(), approvalTerms(), approvalTerms()];
  const k = approvalTerms({ scope: 'payment:pi_2' });
  for (const terms of [h, j1, j2, k]) await stores.approvals.grant(terms);
  target.inject({ kind: 'crash-before-send' });
  const hProposal = refundProposal({ requestId: 'case-h', approval: h.id, amount: 1_000 });
  await expect(holder.gate.submit(hProposal)).rejects.toThrow(/simulated crash/);
  expect(await stores.journal.onceHolder('payment:pi_1', 'refunds')).toBe(holder.gate.effectIdOf(hProposal));

  // Two refunds of pi_1 take both slots and wait behind H.
  await queue.propose(refundProposal({ requestId: 'case-j1', approval: j1.id, amount: 1_000 }));
  await queue.propose(refundProposal({ requestId: 'case-j2', approval: j2.id, amount: 1_000 }));
  await expect.poll(() => queue.queue.getActiveCount(), { timeout: 10_000, interval: 20 }).toBe(2);

  // A refund of pi_2, queued behind them, is judged within seconds: well before H's send would time out.
  const queuedAt = Date.now();
  const { effectId } = await queue.propose(refundProposal({ requestId: 'case-k', approval: k.id, amount: 1_000, paymentIntent: 'pi_2' }));
  const answer = await queue.waitFor(effectId, 10_000);
  expect({ outcome: answer?.outcome ?? null, withinSeconds: Date.now() - queuedAt < 10_000 }).toEqual({ outcome: 'COMMITTED', withinSeconds: true });
});
