// Redis that answers with an error instead of hanging, for a while: OOM (memory full under the noeviction policy the
// project requires) and BUSY (another client's script past busy-reply-threshold). Redis refuses such a command before
// it writes anything, so it is an outage, not a refusal of what was asked: an accepted refund's job waits and is
// tried again, and commits once Redis takes writes again; it is never failed for good. The support API answers 503
// (redis_unavailable) saying why, so the caller retries.
import { randomBytes } from 'node:crypto';
import { Redis, ReplyError } from 'ioredis';
import { pino } from 'pino';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { createEffectsQueue, startEffectsWorker } from '../../queues/effects.js';
import { createMemoryTarget, isRedisOutage, openStores, redisTurnedAway, settledOutcome, startSender } from '../../src/interlock.js';
import { approvalBody, bearer, refundBody, startRig, TOKENS } from '../http/rig.js';
import { approvalTerms, refundProposal, testConfig, testKey } from '../support/harness.js';
import { startPrivateRedis } from '../support/private-redis.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});
const keyPair = testKey();

/**
 * A worker and a producer on a private Redis; Redis starts turning commands away (`from`) at the job's first premise
 * read, which comes right before the dispatch step, and takes them again (`until`) once that submit is over.
 */
async function rig(from: (admin: Redis) => Promise<void>, until: (admin: Redis) => Promise<void>) {
  const redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--busy-reply-threshold', '100']);
  closers.push(() => redis.stop());
  const admin = new Redis(redis.url);
  closers.push(() => admin.quit());
  const config = testConfig({ redisUrl: redis.url, keyPrefix: `away${randomBytes(4).toString('hex')}`, unsafeDurability: false });
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key });
  closers.push(() => stores.close());
  const sender = await startSender(stores, target);
  closers.push(() => sender.close());
  // The producer (the API, the CLI) is another process, with stores of its own.
  const producer = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key });
  closers.push(() => producer.close());
  const queue = createEffectsQueue(producer, { backoffMs: 50 });
  closers.push(() => queue.close());
  let armed = true;
  const readFacts = target.readFacts.bind(target);
  target.readFacts = async (...args) => {
    if (armed) {
      armed = false;
      await from(admin);
    }
    return readFacts(...args);
  };
  const submitLatest = sender.gate.submitLatest.bind(sender.gate);
  const errors: string[] = [];
  sender.gate.submitLatest = async (...args) => {
    try {
      return await submitLatest(...args);
    } catch (error) {
      errors.push(String(error));
      throw error;
    } finally {
      await until(admin);
    }
  };
  const terms = approvalTerms();
  await stores.approvals.grant(terms);
  const proposed = await queue.propose(refundProposal({ approval: terms.id }));
  expect(proposed).toMatchObject({ status: 'recorded', queued: true });
  const worker = startEffectsWorker(stores, sender, { concurrency: 1, transientRetry: { firstDelayMs: 200, maxDelayMs: 500, forMs: 60_000 } });
  closers.push(() => worker.close(true));
  await expect.poll(() => errors.length, { timeout: 10_000 }).toBeGreaterThan(0);
  // Usually within a second. When BullMQ's own commands for the job were turned away too (its move to delayed), the job
  // stays active until its lock lapses (60 s) and the stalled check gives it back (30 s): allow for that.
  await expect.poll(() => settledOutcome(stores, proposed.effectId), { timeout: 110_000, interval: 200 }).not.toBeNull();
  const job = await queue.queue.getJob(proposed.effectId);
  // Not failed for good (an attempt that BullMQ's own commands saw turned away may leave its reason on the job).
  const failedForGood = (await job?.getState()) === 'failed';
  return { firstError: errors[0] ?? '', outcome: await settledOutcome(stores, proposed.effectId), failedForGood, landed: target.landedCount(proposed.effectId) };
}

describe('Redis turning commands away for a while', () => {
  it('the words Redis turns a command away with are outages; its refusals of what was asked are not', () => {
    for (const message of ['OOM command not allowed when used memory > \'maxmemory\'.', 'BUSY Redis is busy running a script.', 'LOADING Redis is loading the dataset in memory', "READONLY You can't write against a read only replica.", 'MISCONF Redis is configured to save RDB snapshots', 'NOREPLICAS Not enough good replicas to write.']) {
      expect(isRedisOutage(new ReplyError(message)), message).toBe(true);
    }
    expect(redisTurnedAway(new ReplyError('OOM command not allowed'))).toBe('OOM');
    for (const message of ['ERR wrong number of arguments', 'WRONGTYPE Operation against a key holding the wrong kind of value', 'ERR Error running script: OOMPH', 'NOSCRIPT No matching script']) {
      expect(isRedisOutage(new ReplyError(message)), message).toBe(false);
    }
    // Only Redis's own replies: an error of the program that happens to start with the word is not one.
    expect(isRedisOutage(new Error('BUSY doing something else'))).toBe(false);
  });

  it('memory full (OOM) at the dispatch step: the job is tried again and the refund commits once, after memory is freed', { timeout: 150_000 }, async () => {
    const ran = await rig(
      (admin) => admin.config('SET', 'maxmemory', '1').then(() => undefined),
      (admin) => admin.config('SET', 'maxmemory', '0').then(() => undefined),
    );
    expect(ran.firstError).toMatch(/OOM/);
    expect(ran).toMatchObject({ outcome: 'COMMITTED', failedForGood: false, landed: 1 });
  });

  it('another script past busy-reply-threshold (BUSY) at the dispatch step: the job is tried again and the refund commits once', { timeout: 150_000 }, async () => {
    let busy: Redis | null = null;
    const ran = await rig(
      async (admin) => {
        busy = admin.duplicate();
        busy.on('error', () => undefined);
        // A read-only script that spins: Redis answers BUSY to every other client until SCRIPT KILL.
        void busy.eval('local i = 0 while true do i = i + 1 end', 0).catch(() => undefined);
        // Busy once Redis answers BUSY to others (after busy-reply-threshold), however slow the machine is today.
        for (let tries = 0; tries < 200; tries += 1) {
          const answer = await admin.ping().then(() => 'PONG', (error: unknown) => String(error));
          if (answer.includes('BUSY')) break;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      },
      async (admin) => {
        await admin.call('SCRIPT', 'KILL').catch(() => undefined);
        busy?.disconnect();
        // SCRIPT KILL only flags the script; Redis answers BUSY until it has stopped. Back only once Redis serves, so
        // the worker's next commands (BullMQ's move of the job to delayed) are not turned away too, which would hold
        // the job until its lock lapses (the 90 s path rig() allows for).
        for (let tries = 0; tries < 200; tries += 1) {
          if ((await admin.ping().then(() => 'PONG', (error: unknown) => String(error))) === 'PONG') break;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      },
    );
    expect(ran.firstError).toMatch(/BUSY/);
    expect(ran).toMatchObject({ outcome: 'COMMITTED', failedForGood: false, landed: 1 });
  });

  it('the support API answers 503 redis_unavailable with what Redis said, and records nothing', async () => {
    const redis = await startPrivateRedis(['--save', '']);
    closers.push(() => redis.stop());
    const api = await startRig({ config: { redisUrl: redis.url } });
    closers.push(() => api.close());
    const approval = approvalBody();
    expect((await request(api.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    await api.redis.config('SET', 'maxmemory', '1');
    try {
      const answer = await request(api.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ approval: approval.id }));
      expect(answer.status).toBe(503);
      expect(answer.body.error.code).toBe('redis_unavailable');
      expect(answer.body.error.message).toContain('OOM: its memory is full under maxmemory');
    } finally {
      await api.redis.config('SET', 'maxmemory', '0');
    }
    expect(await api.effectCount()).toBe(0);
  });
});
