// Cases no worker would ever decide again: a job BullMQ failed for stalling (its workers died mid-decision) and a job
// whose last attempt could not write the failed case (Redis down for that write). Neither ran the processor's catch
// to the end, so the case stays undecided; the decisions worker must not strand it and a resubmission must run it. And
// a resubmission that came while the last attempt's job was completing.
// Real Redis and BullMQ under a random prefix; no Stripe (the deciders decline or never answer).
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { caseEffectId, createDecisionsQueue, startDecisionsWorker, type DecisionsQueue, type DecisionsWorker, type DecisionsWorkerOptions } from '../../queues/decisions.js';
import { CREDIT_FACTS, DeciderError, openStores, REFUND_FACTS, type CaseStatus, type Decider, type Stores } from '../../src/interlock.js';
import { removePrefixes, testConfig, testKey } from '../support/harness.js';
import { refundCase, until } from './case-rig.js';

const config = testConfig({ keyPrefix: `ts${randomBytes(6).toString('hex')}` });
let stores: Stores;
let decisions: DecisionsQueue;
const workers: DecisionsWorker[] = [];

beforeAll(async () => {
  stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  decisions = createDecisionsQueue(stores, { attempts: 2, backoffMs: 50 });
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.close(true)));
});
afterAll(async () => {
  await decisions.close();
  await stores.close();
  await removePrefixes([config.keyPrefix]);
});

/** A model call that never answers (a worker killed while waiting on it never gets one). */
const hanging: Decider = { name: 'anthropic', decide: () => new Promise(() => undefined) };
const declining: Decider = { name: 'rules', decide: async () => ({ action: 'decline', amountCents: null, reason: 'not covered', model: 'scripted', text: 'decline' }) };

function start(decider: Decider, more: Partial<DecisionsWorkerOptions> = {}): DecisionsWorker {
  const worker = startDecisionsWorker(stores, {
    decider,
    effects: {
      propose: () => Promise.reject(new Error('nothing is proposed in these cases')),
    },
    readFacts: async () => ({ chargebacks: [], refunded_by_others: 0, refundable: 10_000, charge_status: 'succeeded' }),
    premises: { refund: REFUND_FACTS, credit: CREDIT_FACTS },
    lockMs: 300,
    concurrency: 1,
    ...more,
  });
  workers.push(worker);
  return worker;
}

const statusOf = async (caseId: string): Promise<CaseStatus | undefined> => (await stores.cases.get(caseId))?.status;

describe('a case whose decisions job no worker would run again', () => {
  it('two workers that died mid-decision do not fail its job for stalling: the next worker decides the case', async () => {
    const submission = await refundCase(stores);
    expect((await decisions.submit(submission, 'sam')).status).toBe('created');
    for (let crash = 1; crash <= 2; crash += 1) {
      const worker = start(hanging);
      await until(`decision ${crash} started`, () => statusOf(submission.caseId), (status) => status?.state === 'deciding' && status.attempts === crash, 10_000);
      // The process dies: its lock is no longer renewed and lapses; the next worker's stalled check hands the job on.
      await worker.close(true);
    }
    start(declining);
    const decided = await until('the case decided', () => statusOf(submission.caseId), (status) => status?.state !== 'deciding', 15_000);
    expect(decided).toMatchObject({ state: 'declined', attempts: 3 });
    // The run completes its job once it has written the case (and closed what the case's decision closes): not failed
    // for stalling, whatever the two dead workers left.
    await until('the job completed', async () => (await decisions.queue.getJob(caseEffectId(submission.caseId)))?.getState(), (state) => state === 'completed' || state === 'failed', 10_000);
    expect(await (await decisions.queue.getJob(caseEffectId(submission.caseId)))?.getState()).toBe('completed');
  });

  it('a last attempt that could not write the failed case leaves it undecided (deciding); submitting it again runs its job again and decides it', async () => {
    const submission = await refundCase(stores);
    const unavailable: Decider = { name: 'anthropic', decide: () => Promise.reject(new Error('the model API is unavailable')) };
    const setStatus = stores.cases.setStatus;
    // Redis answers everything but the write of the failed case (it went down just then).
    stores.cases.setStatus = (caseId, status) => (status.state === 'failed' ? Promise.reject(new Error('Connection is closed.')) : setStatus(caseId, status));
    try {
      start(unavailable);
      expect((await decisions.submit(submission, 'sam')).status).toBe('created');
      const jobId = caseEffectId(submission.caseId);
      await until('the job failed', async () => (await decisions.queue.getJob(jobId))?.getState(), (state) => state === 'failed', 10_000);
    } finally {
      stores.cases.setStatus = setStatus;
    }
    expect((await statusOf(submission.caseId))?.state).toBe('deciding');
    await Promise.all(workers.splice(0).map((worker) => worker.close(true)));
    start(declining);
    expect((await decisions.submit(submission, 'sam')).status).toBe('exists');
    const decided = await until('the case decided', () => statusOf(submission.caseId), (status) => status?.state === 'declined', 10_000);
    expect(decided).toMatchObject({ state: 'declined', attempts: 3, error: null });
  });

  // The worker's completed listener (queues/decisions.ts): the last attempt writes the case failed and returns, and
  // BullMQ completes the job a moment later. A resubmission in between reopens the case (queued) while the job still
  // runs, so it can neither retry it (a running job is neither failed nor completed) nor add it (its id is taken).
  it('a case submitted again between its last attempt writing failed and its job completing is decided by that resubmission alone', async () => {
    const submission = await refundCase(stores);
    let modelUp = false;
    const recovering: Decider = { name: 'anthropic', decide: async (input, options) => (modelUp ? declining.decide(input, options) : Promise.reject(new DeciderError('decider_unavailable', 'The Messages API is overloaded (529).'))) };
    const setStatus = stores.cases.setStatus.bind(stores.cases);
    let resubmitted: Promise<unknown> | null = null;
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
      // The outage outlasts its window at once (1 ms): its last attempt writes the case failed.
      start(recovering, { deciderRetry: { forMs: 1, maxDelayMs: 1 } });
      expect((await decisions.submit(submission, 'sam')).status).toBe('created');
      await until('the resubmission', async () => resubmitted, (value) => value !== null, 10_000);
      await resubmitted;
    } finally {
      stores.cases.setStatus = setStatus;
    }
    const decided = await until('the case decided', () => statusOf(submission.caseId), (status) => status?.state === 'declined', 5_000).catch((error: unknown) => error);
    expect(decided, String(decided)).toMatchObject({ state: 'declined' });
  });
});
