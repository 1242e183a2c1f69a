// Rule: a recovery pass's report says what it settled, what waits and why (POST /v1/recover, the timer's passes). During
// the deployment's 429 pause a pass calls Stripe for nothing (README "Rate limits"), and its report still names every
// open effect it left, with the rate limit as the reason and the pause's end as when it is looked at again: an
// operator never reads an empty report while effects are open.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { startRecovery } from '../../queues/recovery.js';
import { startSender, type Config, type MemoryTarget, type Stores } from '../../src/interlock.js';
import { deadWorkerRig, leftOpenByADeadWorker } from './dead-worker-rig.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** A recovery loop (its timer far off: the test runs its passes) and one effect a dead worker left open before its send. */
async function rig(): Promise<{ config: Config; stores: Stores; recovery: ReturnType<typeof startRecovery>; target: MemoryTarget; effectId: string }> {
  const { config, target, stores, open, approval } = await deadWorkerRig(closers, 2);
  const sender = await startSender(stores, target);
  closers.push(() => sender.close());
  const recovery = startRecovery(stores, sender, { safetyIntervalMs: 3_600_000 });
  closers.push(() => recovery.close());
  await recovery.started;
  return { config, stores, recovery, target, effectId: await leftOpenByADeadWorker(open, target, approval) };
}

/** Every effect a pass's report names. */
function mentioned(report: Awaited<ReturnType<ReturnType<typeof startRecovery>['pass']>>): string[] {
  return [...report.settled, ...report.waiting, ...report.skipped, ...report.unresolved].map((item) => item.effectId);
}

describe('an operator recovery pass during the rate-limit pause', () => {
  it('names the open effect it did not look at, and why', async () => {
    const { config, stores, recovery, target, effectId } = await rig();

    // The deployment's pause (what an effects worker sets on a 429).
    const connection = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
    const effects = new Queue(stores.queues.effects, { connection, ...stores.bullmq });
    closers.push(async () => {
      await effects.close();
      await connection.quit();
    });
    await effects.rateLimit(60_000);

    const report = await recovery.pass();
    expect((await stores.journal.readState('payment:pi_1', effectId)).state.open).toBe(true);
    expect(target.landedCount(effectId)).toBe(0);
    expect(mentioned(report)).toEqual([effectId]);
    expect(report.skipped[0]?.reason).toContain('Stripe is rate-limiting this deployment (429)');
    expect(report.skipped[0]?.retryAt).toBeGreaterThan(Date.now() + 30_000);
    expect(report.nextAt).toBe(report.skipped[0]?.retryAt);
  });

  it('with no pause in force the same pass looks the effect up and says what it waits for', async () => {
    const { recovery, effectId } = await rig();
    const report = await recovery.pass();
    expect(mentioned(report)).toEqual([effectId]);
    expect(report.waiting[0]?.reason).toContain('a lookup that finds nothing is trusted only after');
  });
});
