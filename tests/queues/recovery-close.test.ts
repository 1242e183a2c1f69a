// Closing recovery waits for every pass in progress, whoever started it: the start, the safety timer, a pass job or
// a caller (an operator's POST /v1/recover). A pass may be resending a dead worker's effect; `serve` closes the
// sender (its heartbeat cleared) and the stores right after recovery, so a pass left running would have its answer
// go unrecorded and, on a tier-2 target, its effect taken over and applied again by the next worker while the
// resend is still on the wire.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { startRecovery } from '../../queues/recovery.js';
import { InterlockError, startSender, type MemoryTarget } from '../../src/interlock.js';
import { sleep } from '../support/harness.js';
import { deadWorkerRig, leftOpenByADeadWorker } from './dead-worker-rig.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

const rig = (tier: 1 | 2) => deadWorkerRig(closers, tier);

async function sendStarted(target: MemoryTarget, effectId: string, withinMs: number): Promise<void> {
  const giveUp = Date.now() + withinMs;
  while (!target.sendStarts.some((start) => start.effectId === effectId) && Date.now() < giveUp) await sleep(10);
  expect(target.sendStarts.some((start) => start.effectId === effectId)).toBe(true);
}

describe('closing recovery', () => {
  it('waits for the safety timer\'s pass in progress: the effect it is resending is settled when close() returns', async () => {
    const { target, stores, open, approval } = await rig(1);
    const sender = await startSender(stores, target);
    const recovery = startRecovery(stores, sender, { safetyIntervalMs: 400 });
    await recovery.started;
    const effectId = await leftOpenByADeadWorker(open, target, approval);
    // The safety pass resends it under the same key; Stripe takes 1.5 s to answer.
    target.inject({ kind: 'slow-send', delayMs: 1_500 });
    await sendStarted(target, effectId, 5_000);
    await recovery.close();
    expect((await stores.journal.readState('payment:pi_1', effectId)).state.open).toBe(false);
    await sender.close();
    expect((await stores.journal.receipt(effectId))?.entries.map((entry) => entry.kind)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
    expect(target.landedCount(effectId)).toBe(1);
  });

  it('waits for a pass a caller started (an operator\'s POST /v1/recover), and starts none once closing', async () => {
    const { target, stores, open, approval } = await rig(1);
    const sender = await startSender(stores, target);
    const recovery = startRecovery(stores, sender, { safetyIntervalMs: 3_600_000 });
    await recovery.started;
    const effectId = await leftOpenByADeadWorker(open, target, approval);
    target.inject({ kind: 'slow-send', delayMs: 1_500 });
    const operators = recovery.pass();
    await sendStarted(target, effectId, 5_000);
    await recovery.close();
    expect((await stores.journal.readState('payment:pi_1', effectId)).state.open).toBe(false);
    expect((await operators).settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_BY_RETRY' })]);
    const late = await recovery.pass().catch((error: unknown) => error);
    expect(late).toBeInstanceOf(InterlockError);
    expect(late).toMatchObject({ code: 'not_available' });
    await sender.close();
    expect(target.landedCount(effectId)).toBe(1);
  });

  it('a tier-2 effect re-applied by the safety pass of a service that stops lands once: the next worker finds it, not nothing', async () => {
    const { config, target, stores, open, approval } = await rig(2);
    // Pass jobs are taken elsewhere (another worker of the fleet): here only the safety timer runs.
    const passJobs = new Queue(stores.queues.recovery, { connection: new Redis(config.redisUrl, { maxRetriesPerRequest: null }), ...stores.bullmq });
    await passJobs.pause();
    closers.push(() => passJobs.close());
    const sender = await startSender(stores, target);
    const recovery = startRecovery(stores, sender, { safetyIntervalMs: 400 });
    await recovery.started;
    const effectId = await leftOpenByADeadWorker(open, target, approval);
    // After the quiet period the safety pass finds nothing and re-applies it; this send takes 2 s.
    target.inject({ kind: 'slow-send', delayMs: 2_000 });
    await sendStarted(target, effectId, 8_000);
    // The stop, as serve makes it: recovery, then the sender (its heartbeat cleared).
    await recovery.close();
    await sender.close();
    const nextStores = await open();
    const next = await startSender(nextStores, target);
    const nextRecovery = startRecovery(nextStores, next, { safetyIntervalMs: 400 });
    await nextRecovery.started;
    await sleep(3_000);
    await nextRecovery.close();
    await next.close();
    await nextStores.close();
    expect(target.landedCount(effectId)).toBe(1);
    expect((await stores.journal.receipt(effectId))?.entries.map((entry) => entry.kind)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
  });
});
