// A service (stores, sender, effects queue and worker) beside another worker process, alive, whose send of refund H
// on pi_1 never came back: H's dispatch stays open and holds pi_1's refunds while that process beats, so a refund of
// pi_1 queued now waits behind it (IN_FLIGHT) until the holder stops and recovery settles H. Both share one
// in-memory target and one key prefix; everything is closed, and the prefix removed, when the test finishes.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { expect, onTestFinished } from 'vitest';
import { createEffectsQueue, startEffectsWorker, type EffectsQueue, type EffectsWorkerOptions } from '../../queues/effects.js';
import { createMemoryTarget, openStores, startSender, type Config, type MemoryTarget, type Sender, type Stores } from '../../src/interlock.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig, testKey } from '../support/harness.js';

export type StuckHolderRig = {
  target: MemoryTarget;
  /** The service's side: its worker runs with the options the test gave. */
  stores: Stores;
  sender: Sender;
  queue: EffectsQueue;
  /** The other process: H stays held until its heartbeat stops. */
  holder: Sender;
};

/**
 * Starts the rig inside a test. `config` must keep claims (claimTtlMs) longer than the test, or H's claim lapses
 * under it; the target's send timeout is the config's. `payments` (pi_1 among them) read as clean premises.
 */
export async function startStuckHolder(options: { label: string; config: Partial<Config>; payments?: readonly string[]; worker?: EffectsWorkerOptions }): Promise<StuckHolderRig> {
  const config = testConfig({ keyPrefix: `t-${options.label}-${randomBytes(5).toString('hex')}`, ...options.config });
  const key = testKey().key;
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs, movedBySends: ['refunded_by_others'] });
  for (const payment of options.payments ?? ['pi_1']) target.world.set(`payment:${payment}`, { chargebacks: [], refunded_by_others: 0 });
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: key });
  const sender = await startSender(stores, target, { workerId: 'service' });
  const queue = createEffectsQueue(stores);
  const worker = startEffectsWorker(stores, sender, options.worker);
  const holderStores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: key });
  const holder = await startSender(holderStores, target, { workerId: 'holder' });
  const close = async () => {
    await worker.close(true);
    await queue.close();
    await sender.close();
    await holder.close();
    await holderStores.close();
    await stores.close();
    await removePrefixes([config.keyPrefix]);
  };
  // A failure while closing is not the test's: the test reports its own.
  onTestFinished(() => close().catch(() => undefined));
  const h = approvalTerms();
  await stores.approvals.grant(h);
  target.inject({ kind: 'crash-before-send' });
  const hProposal = refundProposal({ requestId: 'case-h', approval: h.id, amount: 1_000 });
  await expect(holder.gate.submit(hProposal)).rejects.toThrow(/simulated crash/);
  expect(await stores.journal.onceHolder('payment:pi_1', 'refunds')).toBe(holder.gate.effectIdOf(hProposal));
  return { target, stores, sender, queue, holder };
}
