// Rule: P progress, and a person hears of money held: the effects queue's rate-limit key pauses the workers and the
// recovery passes only as a 429 does, for at most Stripe's longest Retry-After the service honours
// (LONGEST_RETRY_AFTER_MS, 15 min). A longer pause in that key is no 429's (someone wrote it: BullMQ Queue.rateLimit,
// a SET on the key): recovery and an effects worker starting cut it to that cap and log an error naming the key, what
// it had left and how to clear it, and the pass report says it was set by hand instead of blaming Stripe. During any
// pause, an effect a pass leaves untouched still gets its send_unanswered alert once it has been open past
// INTERLOCK_UNANSWERED_ALERT_MS (before, a 7-day pause held a dead worker's refund silently, every report blaming a 429).
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startEffectsWorker } from '../../queues/effects.js';
import { startRecovery } from '../../queues/recovery.js';
import { createMemoryTarget, LONGEST_RETRY_AFTER_MS, openStores, startSender, type Stores } from '../../src/interlock.js';
import { approvalTerms, removePrefixes, testConfig, testKey } from '../support/harness.js';
import { leftOpenByADeadWorker } from './dead-worker-rig.js';

const keyPair = testKey();
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

type Line = { level: number; msg: string; key?: string; leftMs?: number };

/** Stores logging into `lines`, a refund a dead worker left open, and a BullMQ client on the effects queue's keys. */
async function rig() {
  const config = testConfig({ keyPrefix: `hp${randomBytes(6).toString('hex')}`, sendTimeoutMs: 1_000, claimTtlMs: 2_000, unansweredAlertMs: 1 });
  const target = createMemoryTarget({ tier: 2, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Line);
      done();
    },
  });
  const stores = await openStores(config, { logger: pino({ level: 'info' }, sink), signingKey: keyPair.key });
  closers.push(async () => {
    await stores.close();
    await removePrefixes([config.keyPrefix]);
  });
  const terms = approvalTerms();
  await stores.approvals.grant(terms);
  const quiet = () => openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key });
  const effectId = await leftOpenByADeadWorker(quiet, target, terms.id);
  const connection = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
  const effects = new Queue(stores.queues.effects, { connection, ...stores.bullmq });
  closers.push(async () => {
    await effects.close();
    connection.disconnect();
  });
  return { stores, target, effects, connection, lines, effectId };
}

async function recoveryOf(stores: Stores, target: ReturnType<typeof createMemoryTarget>) {
  const sender = await startSender(stores, target);
  closers.push(() => sender.close());
  const recovery = startRecovery(stores, sender, { safetyIntervalMs: 3_600_000 });
  closers.push(() => recovery.close());
  await recovery.started;
  return recovery;
}

const unansweredOf = async (stores: Stores, effectId: string) => (await stores.alerts.list({ all: true })).filter((alert) => alert.effectId === effectId && alert.kind === 'send_unanswered');

describe('a pause of the effects queue longer than any the service sets', () => {
  it('is cut to LONGEST_RETRY_AFTER_MS by recovery, logged as set by hand, and the held refund is alerted as unanswered', async () => {
    const { stores, target, effects, connection, lines, effectId } = await rig();
    await effects.rateLimit(7 * 24 * 3_600_000);
    const key = effects.toKey('limiter');

    const recovery = await recoveryOf(stores, target);
    const report = await recovery.pass();

    // Cut: the workers and the passes wait 15 min at most, not a week.
    const left = await connection.pttl(key);
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(LONGEST_RETRY_AFTER_MS);
    const cut = lines.find((line) => line.level === 50 && line.key === key);
    expect(cut?.msg).toMatch(/set it by hand/);
    expect(cut?.msg).toContain(`redis-cli DEL ${key}`);
    expect(cut?.leftMs).toBeGreaterThan(6 * 24 * 3_600_000);
    // The pass at start and the pass after it both say so, naming the key: no 429 is blamed.
    const skipped = report.skipped.find((item) => item.effectId === effectId);
    expect(skipped?.reason).toContain(key);
    expect(skipped?.reason).toMatch(/set by hand|by hand/);
    expect(skipped?.reason).not.toMatch(/Stripe is rate-limiting/);
    // The refund the dead worker left open is held, and a person is told.
    expect((await stores.journal.readState('payment:pi_1', effectId)).state.open).toBe(true);
    const alerts = await unansweredOf(stores, effectId);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]?.sentence).toMatch(/nothing is sent/);
  }, 30_000);

  it("is cut by an effects worker as it starts, with the same error; the service's own pause is left as it is", async () => {
    const { stores, target, effects, connection, lines } = await rig();
    const key = effects.toKey('limiter');
    const sender = await startSender(stores, target);
    closers.push(() => sender.close());

    await effects.rateLimit(10 * 60_000);
    const own = startEffectsWorker(stores, sender);
    await own.lookedAtQueue;
    await own.close(true);
    expect(await connection.pttl(key)).toBeGreaterThan(9 * 60_000);
    expect(lines.filter((line) => line.key === key)).toEqual([]);

    await effects.rateLimit(3 * 24 * 3_600_000);
    const worker = startEffectsWorker(stores, sender);
    closers.push(() => worker.close(true));
    await worker.lookedAtQueue;
    await worker.close(true);
    expect(await connection.pttl(key)).toBeLessThanOrEqual(LONGEST_RETRY_AFTER_MS);
    expect(lines.find((line) => line.level === 50 && line.key === key)?.msg).toMatch(/set it by hand/);
  }, 30_000);

  it("during the service's own pause (a 429's): honoured as before, blamed on Stripe, and the held refund is still alerted", async () => {
    const { stores, target, effects, connection, effectId } = await rig();
    await effects.rateLimit(10 * 60_000);
    const sendsBefore = target.sendStarts.length;
    const recovery = await recoveryOf(stores, target);
    const report = await recovery.pass();
    expect(await connection.pttl(effects.toKey('limiter'))).toBeGreaterThan(9 * 60_000);
    expect(report.skipped.find((item) => item.effectId === effectId)?.reason).toMatch(/Stripe is rate-limiting this deployment/);
    expect(target.sendStarts).toHaveLength(sendsBefore);
    expect(target.landedCount(effectId)).toBe(0);
    expect(await unansweredOf(stores, effectId)).toHaveLength(1);
  }, 30_000);
});
