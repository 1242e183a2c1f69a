// An effects queue and its worker over a memory target, with the stores and sender they run on: what the effects
// tests start, and close (each closer pushed onto the file's list, in the order they must close).
import type { Logger } from 'pino';
import { pino } from 'pino';
import { createEffectsQueue, startEffectsWorker, type EffectsQueue, type EffectsQueueOptions, type EffectsWorkerOptions } from '../../queues/effects.js';
import { createMemoryTarget, InterlockError, openStores, startSender, type Config, type MemoryTarget, type Sender, type SigningKey, type Stores } from '../../src/interlock.js';
import { removePrefixes, testKey } from '../support/harness.js';

export type EffectsRig = { config: Config; target: MemoryTarget; stores: Stores; sender: Sender; queue: EffectsQueue; worker: ReturnType<typeof startEffectsWorker> };

/**
 * Opens stores on `config`, a sender (under `workerId` when given) over a tier-1 memory target whose payment pi_1 has
 * no chargebacks or other refunds, the effects queue and a worker; registers their closing, worker first, on `closers`.
 */
export async function startEffectsRig(
  closers: (() => Promise<unknown>)[],
  config: Config,
  options: { logger?: Logger; workerId?: string; queue?: EffectsQueueOptions; worker?: EffectsWorkerOptions; signingKey?: SigningKey } = {},
): Promise<EffectsRig> {
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const stores = await openStores(config, { logger: options.logger ?? pino({ level: 'silent' }), signingKey: options.signingKey ?? testKey().key });
  const sender = await startSender(stores, target, options.workerId === undefined ? {} : { workerId: options.workerId });
  const queue = createEffectsQueue(stores, options.queue);
  const worker = startEffectsWorker(stores, sender, options.worker);
  closers.push(async () => {
    await worker.close(true);
    await queue.close();
    await sender.close();
    await stores.close();
    await removePrefixes([config.keyPrefix]);
  });
  return { config, target, stores, sender, queue, worker };
}

/**
 * A tier-1 memory target (payment pi_1 with no chargebacks or other refunds) whose premise reads Stripe refuses while
 * `refusing` (a revoked key: target_misconfigured, so a job fails for good before it is judged); `refuse(false)` gives
 * the key back.
 */
export function keyRefusingTarget(config: Config): { target: MemoryTarget; refuse(on: boolean): void } {
  let refusing = true;
  const inner = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  const target: MemoryTarget = {
    ...inner,
    async readFacts(...args: Parameters<MemoryTarget['readFacts']>) {
      if (refusing) throw new InterlockError('target_misconfigured', 'Stripe refused the API key (401): the key may have been rotated.');
      return inner.readFacts(...args);
    },
  };
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  return { target, refuse: (on) => void (refusing = on) };
}
