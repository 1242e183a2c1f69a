// Rule (queues/decisions.ts, the worker's completed listener): a case that failed retryably (decider_unavailable) and is submitted again is decided again (README, Cases
// step 6: "submit the case again (the same id and payload) once the Messages API answers"); a resubmission must never
// leave the case `queued` with no job that will ever run it.
//
// Race: the last attempt's catch writes the case `failed` (setStatus) and only then returns, so BullMQ marks the job
// completed a moment later. A resubmission that lands in between reopens the case (queued) and calls
// requeueFailed(jobId, 'completed'), which finds the job neither failed nor completed (still active) and does nothing;
// queue.add under the same job id is a no-op. The job then completes: the case stays `queued` for good, and every
// later resubmission is a no-op too (the case is not failed, so not reopened; the job is completed, not failed).
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { caseEffectId, createDecisionsQueue, startDecisionsWorker, type DecisionsQueue, type DecisionsWorker } from '../../queues/decisions.js';
import { CREDIT_FACTS, DeciderError, openStores, REFUND_FACTS, type CaseStatus, type CaseSubmission, type Decider, type Stores } from '../../src/interlock.js';
import { testConfig, testKey } from '../support/harness.js';

const config = testConfig({ keyPrefix: `rvd${randomBytes(6).toString('hex')}` });
let stores: Stores;
let decisions: DecisionsQueue;
const workers: DecisionsWorker[] = [];

beforeAll(async () => {
  stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  decisions = createDecisionsQueue(stores, { attempts: 1, backoffMs: 50 });
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.close(true)));
});
afterAll(async () => {
  await decisions.close();
  await stores.close();
  const redis = new Redis(config.redisUrl);
  for (const pattern of [`${config.keyPrefix}:*`, `{${config.keyPrefix}-queues}:*`]) {
    const stale = await redis.keys(pattern);
    if (stale.length > 0) await redis.del(...stale);
  }
  await redis.quit();
});

let modelUp = false;
const model: Decider = {
  name: 'anthropic',
  decide: async () => {
    if (!modelUp) throw new DeciderError('decider_unavailable', 'The Messages API is overloaded (529).');
    return { action: 'decline', reason: 'not covered', model: 'scripted', text: 'decline' };
  },
};

function start(): DecisionsWorker {
  const worker = startDecisionsWorker(stores, {
    decider: model,
    effects: { propose: () => Promise.reject(new Error('nothing is proposed here')) },
    readFacts: async () => ({ chargebacks: [], refunded_by_others: 0, refundable: 10_000, charge_status: 'succeeded' }),
    premises: { refund: REFUND_FACTS, credit: CREDIT_FACTS },
    lockMs: 300,
    concurrency: 1,
  });
  workers.push(worker);
  return worker;
}

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)} after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const statusOf = async (caseId: string): Promise<CaseStatus | undefined> => (await stores.cases.get(caseId))?.status;

describe('a case resubmitted right as its last attempt fails', () => {
  it('is decided once the model answers again, not left queued with no job to run it', async () => {
    const id = randomBytes(5).toString('hex');
    await stores.approvals.grant({ id: `ap_${id}`, approver: 'support-lead', capCents: 2_000, scope: `payment:pi_${id}`, expiresAt: Date.now() + 3_600_000, maxUses: 1 });
    const submission: CaseSubmission = { caseId: `case-${id}`, kind: 'refund', subject: `pi_${id}`, incident: null, story: 'The jar arrived cracked.', approval: `ap_${id}`, agent: 'support-bot' };
    const setStatus = stores.cases.setStatus.bind(stores.cases);
    let resubmitted: Promise<unknown> | null = null;
    // The caller's retry ("submit the case again") arrives the instant the failed status is written, before the
    // processor returns and BullMQ completes the job.
    stores.cases.setStatus = async (caseId, status) => {
      const written = await setStatus(caseId, status);
      if (status.state === 'failed' && resubmitted === null) {
        modelUp = true;
        resubmitted = decisions.submit(submission, 'sam');
        await resubmitted;
      }
      return written;
    };
    try {
      start();
      expect((await decisions.submit(submission, 'sam')).status).toBe('created');
      await until('the resubmission ran', async () => resubmitted, (value) => value !== null);
      await resubmitted;
      await until('the job completed', async () => (await decisions.queue.getJob(caseEffectId(submission.caseId)))?.getState(), (state) => state === 'completed');
    } finally {
      stores.cases.setStatus = setStatus;
    }
    // The resubmission alone gets it decided: nobody has to submit it a third time.
    const decided = await until('the case decided', () => statusOf(submission.caseId), (status) => status?.state === 'declined', 5_000).catch((error: unknown) => error);
    expect(decided, String(decided)).toMatchObject({ state: 'declined' });
  });
});
