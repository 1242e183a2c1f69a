// Rule: a decider outage is waited out for INTERLOCK_RETRY_FOR_MS from the case's first failure, counted on Redis's
// clock whichever decisions worker retries it: the window's start (the job's `deciderOutage.failingSince`) and each
// look at it are Redis time, not a worker's Date.now(). A worker whose clock is an hour ahead must not fail with
// decider_unavailable a case whose outage began a second ago; one an hour behind must not retry past the window.
// Real Redis and BullMQ under a random prefix, a decider that is always overloaded; this process plays the second
// worker, its Date.now() moved (BullMQ's own times move with it, as on a host whose clock is off).
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { caseEffectId, createDecisionsQueue, startDecisionsWorker, type DecisionsQueue, type DecisionsWorker, type DeciderOutage } from '../../queues/decisions.js';
import { CREDIT_FACTS, DeciderError, openStores, REFUND_FACTS, type CaseStatus, type Stores } from '../../src/interlock.js';
import { removePrefixes, testConfig, testKey } from '../support/harness.js';
import { refundCase } from './case-rig.js';

const HOUR = 3_600_000;
const WINDOW_MS = 30 * 60_000;
const config = testConfig({ keyPrefix: `dwc${randomBytes(6).toString('hex')}`, retryMaxDelayMs: 40 });
let stores: Stores;
let decisions: DecisionsQueue;
const workers: DecisionsWorker[] = [];

beforeAll(async () => {
  stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  decisions = createDecisionsQueue(stores, { attempts: 5, backoffMs: 10 });
});
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(workers.splice(0).map((worker) => worker.close(true)));
});
afterAll(async () => {
  await decisions.close();
  await stores.close();
  await removePrefixes([config.keyPrefix]);
});

const overloaded = () => new DeciderError('decider_unavailable', 'The Messages API is overloaded (529). Case x was not decided and nothing was proposed; decide it again later: submit the case again (the same id and payload) once the Messages API answers.', { apiStatus: 529 });

/**
 * A case whose decider is down, its outage noted as begun `sinceAgoMs` before Redis's now (as a worker on Redis's clock
 * wrote it, in an earlier run of the job), run by a worker whose clock is `skewMs` off: the case and its job's outage
 * once that worker has looked at it.
 */
async function secondLook(sinceAgoMs: number, skewMs: number): Promise<{ failingSince: number; outage: DeciderOutage | undefined; status: CaseStatus | undefined }> {
  const submission = await refundCase(stores);
  expect((await decisions.submit(submission, 'sam')).status).toBe('created');
  const failingSince = (await stores.journal.serverTime()) - sinceAgoMs;
  const job = await decisions.queue.getJob(caseEffectId(submission.caseId));
  await job?.updateData({ ...job.data, deciderOutage: { failures: 1, failingSince, started: 0 } });

  const real = Date.now.bind(Date);
  vi.spyOn(Date, 'now').mockImplementation(() => real() + skewMs);
  workers.push(
    startDecisionsWorker(stores, {
      decider: { name: 'anthropic', decide: () => Promise.reject(overloaded()) },
      effects: { propose: () => Promise.reject(new Error('nothing is proposed in these cases')) },
      readFacts: async () => ({ chargebacks: [], refunded_by_others: 0, refundable: 10_000, charge_status: 'succeeded' }),
      premises: { refund: REFUND_FACTS, credit: CREDIT_FACTS },
      concurrency: 1,
      deciderRetry: { forMs: WINDOW_MS, maxDelayMs: 40 },
    }),
  );
  // Until the worker has looked at the case again: it failed, or its job noted a second failure.
  for (let look = 0; look < 500; look += 1) {
    const status = (await stores.cases.get(submission.caseId))?.status;
    const outage = (await decisions.queue.getJob(caseEffectId(submission.caseId)))?.data.deciderOutage;
    if (status?.state === 'failed' || (outage?.failures ?? 0) >= 2) return { failingSince, outage, status };
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`case ${submission.caseId} was not run again`);
}

describe('waiting out a decider outage, on a worker whose clock differs from the one that noted its start', () => {
  it('an hour ahead, a second into a 30-minute window: the case waits and is tried again, not failed', async () => {
    const seen = await secondLook(1_000, HOUR);
    expect(seen.status?.state).toBe('queued');
    expect(seen.status?.error?.message).toContain(`tried again by itself until ${new Date(seen.failingSince + WINDOW_MS).toISOString()}`);
    expect(seen.outage).toMatchObject({ failures: 2, failingSince: seen.failingSince });
  });

  it('an hour behind, a second past the end of the window: the case fails with decider_unavailable, saying for how long', async () => {
    const seen = await secondLook(WINDOW_MS + 1_000, -HOUR);
    expect(seen.status?.state).toBe('failed');
    expect(seen.status?.error?.code).toBe('decider_unavailable');
    expect(seen.status?.error?.message).toMatch(/It was unavailable for 18\d\d s \(2 tries, INTERLOCK_RETRY_FOR_MS=1800000\)\.$/);
  });
});
