// Rule: a decider outage (the Messages API refusing connections, timing out, answering 5xx, 529 or 429:
// decider_unavailable) is waited out, not counted against the decisions job's attempts: a case accepted while the
// model is down for longer than the job's 5 attempts' backoff is decided once the model is back, and it fails with
// decider_unavailable only once the outage has lasted INTERLOCK_RETRY_FOR_MS from the case's first failure. The
// logs say so once per case per outage (each retry at debug), not once per retry. Failures that are no outage keep
// their handling: a configuration the API refused fails the case at once, a fact read that fails uses the job's
// attempts, unless Stripe was unavailable for it (StripeUnavailable, or no answer in time), which is waited out too.
// Real Redis and BullMQ under a random prefix; no Stripe (the facts are read from a stub, the decider is scripted).
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { afterDeciderOutage, caseEffectId, createDecisionsQueue, MAX_ASKED_WAIT_MS, startDecisionsWorker, type DecisionsQueue, type DecisionsWorker, type DecisionsWorkerOptions } from '../../queues/decisions.js';
import { CREDIT_FACTS, DeciderError, openStores, REFUND_FACTS, StripeUnavailable, type CaseStatus, type Decider, type Stores } from '../../src/interlock.js';
import { removePrefixes, testConfig, testKey } from '../support/harness.js';
import { refundCase, until } from './case-rig.js';

// The job's own attempts as in production (5), from a short backoff; waits between tries doubling to 40 ms at most.
const config = testConfig({ keyPrefix: `to${randomBytes(6).toString('hex')}`, retryMaxDelayMs: 40 });
const lines: Array<{ level: number; msg: string; caseId?: string }> = [];
let stores: Stores;
let decisions: DecisionsQueue;
const workers: DecisionsWorker[] = [];

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as { level: number; msg: string; caseId?: string });
      done();
    },
  });
  stores = await openStores(config, { logger: pino({ level: 'debug' }, sink), signingKey: testKey().key });
  decisions = createDecisionsQueue(stores, { attempts: 5, backoffMs: 10 });
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.close(true)));
});
afterAll(async () => {
  await decisions.close();
  await stores.close();
  await removePrefixes([config.keyPrefix]);
});

const declining: Decider = { name: 'rules', decide: async () => ({ action: 'decline', amountCents: null, reason: 'not covered', model: 'scripted', text: 'decline' }) };
const overloaded = () => new DeciderError('decider_unavailable', 'The Messages API is overloaded (529). Case x was not decided and nothing was proposed; decide it again later: submit the case again (the same id and payload) once the Messages API answers.', { apiStatus: 529 });

/** A Messages API that is down while `down()` says so, then declines: the number of calls it took. */
function outage(down: () => boolean): Decider & { calls: () => number } {
  let calls = 0;
  return {
    name: 'anthropic',
    calls: () => calls,
    decide: async (input, options) => {
      calls += 1;
      if (down()) throw overloaded();
      return declining.decide(input, options);
    },
  };
}

function start(decider: Decider, more: Partial<DecisionsWorkerOptions> = {}): DecisionsWorker {
  const worker = startDecisionsWorker(stores, {
    decider,
    effects: { propose: () => Promise.reject(new Error('nothing is proposed in these cases')) },
    readFacts: async () => ({ chargebacks: [], refunded_by_others: 0, refundable: 10_000, charge_status: 'succeeded' }),
    premises: { refund: REFUND_FACTS, credit: CREDIT_FACTS },
    concurrency: 4,
    ...more,
  });
  workers.push(worker);
  return worker;
}

/** The case's job as it stands: its state and the attempts it used. */
async function jobEnd(caseId: string): Promise<{ state: string | undefined; attemptsMade: number | undefined }> {
  const job = await decisions.queue.getJob(caseEffectId(caseId));
  return { state: await job?.getState(), attemptsMade: job?.attemptsMade };
}

const statusOf = async (caseId: string): Promise<CaseStatus | undefined> => (await stores.cases.get(caseId))?.status;
const settled = (status: CaseStatus | undefined) => status !== undefined && status.state !== 'queued' && status.state !== 'deciding';
/** What a case logged at `info` or above (the level a service logs at by default), and at debug. */
const logged = (caseId: string) => ({ info: lines.filter((line) => line.caseId === caseId && line.level >= 30), debug: lines.filter((line) => line.caseId === caseId && line.level < 30) });

describe('a case accepted while the Messages API is down', () => {
  it('down for 12 tries (longer than the 5 attempts and their backoff), then back: the case is decided, and it logged the outage once', async () => {
    const cases = await Promise.all([refundCase(stores), refundCase(stores), refundCase(stores)]);
    // Down for the first 12 calls of each case, then back.
    const callsOf = new Map<string, number>();
    const model: Decider = {
      name: 'anthropic',
      decide: async (input, options) => {
        const calls = (callsOf.get(input.caseId) ?? 0) + 1;
        callsOf.set(input.caseId, calls);
        if (calls <= 12) throw overloaded();
        return declining.decide(input, options);
      },
    };
    start(model);
    for (const submission of cases) expect((await decisions.submit(submission, 'sam')).status).toBe('created');
    for (const submission of cases) {
      const status = await until(`case ${submission.caseId} settled`, () => statusOf(submission.caseId), settled, 20_000);
      // Asked once more once the model was back; before, the job's 5 attempts ran out and the case failed for good.
      expect(status, JSON.stringify(status?.error)).toMatchObject({ state: 'declined', attempts: 13, error: null });
      expect(callsOf.get(submission.caseId)).toBe(13);
      // The outage used up none of its attempts: the one counted is the run that completed it (the case's status is
      // written before its job completes, so the job is read until it has).
      await expect.poll(() => jobEnd(submission.caseId), { timeout: 10_000 }).toEqual({ state: 'completed', attemptsMade: 1 });
      // One warning when the outage began and the decline: not one line per retry.
      const { info, debug } = logged(submission.caseId);
      expect(info.map((line) => line.msg)).toEqual([expect.stringMatching(/^the decider is unavailable: the case waits for it/), 'case declined by the decider']);
      expect(debug).toHaveLength(11);
    }
  });

  it('down for longer than INTERLOCK_RETRY_FOR_MS: the case fails with decider_unavailable, saying for how long; submitted again with the model back, it waits out a new outage of its own', async () => {
    const down = true;
    const model = outage(() => down);
    start(model, { deciderRetry: { forMs: 300, maxDelayMs: 40 } });
    const submission = await refundCase(stores);
    expect((await decisions.submit(submission, 'sam')).status).toBe('created');
    const failed = await until('the case failed', () => statusOf(submission.caseId), settled, 20_000);
    expect(failed).toMatchObject({ state: 'failed', error: { code: 'decider_unavailable' } });
    expect(failed?.error?.message).toMatch(/It was unavailable for \d+ s \(\d+ tries, INTERLOCK_RETRY_FOR_MS=300\)\.$/);
    expect(failed?.error?.message).toContain('submit the case again');
    expect(model.calls()).toBeGreaterThan(1);
    expect(logged(submission.caseId).info.map((line) => line.msg)).toEqual([expect.stringMatching(/^the decider is unavailable/), 'case failed; nothing was proposed']);

    // Submitted again: its job runs afresh, and the first failure of this run starts a new window (the last one's
    // start, long past, does not fail it at once).
    const before = model.calls();
    const firstOutage = (await decisions.queue.getJob(caseEffectId(submission.caseId)))?.data.deciderOutage;
    // The tries before the one that gave up, noted as the job waited.
    expect(firstOutage?.failures).toBe(before - 1);
    let again = 0;
    const flaky = outage(() => (again += 1) <= 2);
    await Promise.all(workers.splice(0).map((worker) => worker.close(true)));
    start(flaky, { deciderRetry: { forMs: 60_000, maxDelayMs: 40 } });
    const resubmitted = Date.now();
    expect((await decisions.submit(submission, 'sam')).status).toBe('exists');
    const decided = await until('the case decided', () => statusOf(submission.caseId), settled, 20_000);
    expect(decided).toMatchObject({ state: 'declined', error: null });
    expect(flaky.calls()).toBe(3);
    expect(model.calls()).toBe(before);
    const secondOutage = (await decisions.queue.getJob(caseEffectId(submission.caseId)))?.data.deciderOutage;
    expect(secondOutage?.failures).toBe(2);
    expect(secondOutage?.failingSince).toBeGreaterThanOrEqual(resubmitted);
  });
});

describe('failures that are no outage keep their handling', () => {
  it('a configuration the Messages API refused (401) fails the case at once, asked once', async () => {
    let calls = 0;
    start({ name: 'anthropic', decide: () => ((calls += 1), Promise.reject(new DeciderError('invalid_config', 'The Messages API refused the call (401): check ANTHROPIC_API_KEY.', { apiStatus: 401 }))) });
    const submission = await refundCase(stores);
    expect((await decisions.submit(submission, 'sam')).status).toBe('created');
    expect(await until('the case failed', () => statusOf(submission.caseId), settled, 20_000)).toMatchObject({ state: 'failed', attempts: 1, error: { code: 'invalid_config' } });
    expect(calls).toBe(1);
  });

  it('Stripe unavailable while the facts are read (a 503) is waited out as the decider is: decided once Stripe answers, no attempt spent', async () => {
    let reads = 0;
    const unavailable = () => new StripeUnavailable('Stripe answered 503', { stripeStatus: 503, stripeCode: null, requestId: null, retryAfterMs: null, rateLimited: false, outcomeUnknown: false });
    start(declining, { readFacts: async () => ((reads += 1) <= 8 ? Promise.reject(unavailable()) : { chargebacks: [], refunded_by_others: 0, refundable: 10_000, charge_status: 'succeeded' }) });
    const submission = await refundCase(stores);
    expect((await decisions.submit(submission, 'sam')).status).toBe('created');
    const status = await until('the case decided', () => statusOf(submission.caseId), settled, 20_000);
    expect(status, JSON.stringify(status?.error)).toMatchObject({ state: 'declined', error: null });
    expect(reads).toBe(9);
    await expect.poll(() => jobEnd(submission.caseId), { timeout: 10_000 }).toEqual({ state: 'completed', attemptsMade: 1 });
    expect(logged(submission.caseId).info.map((line) => line.msg)).toEqual([expect.stringMatching(/^Stripe is unavailable for the facts: the case waits for it/), 'case declined by the decider']);
  });

  it("a fact read that keeps failing otherwise uses the job's 5 attempts, then fails the case with premise_read_failed", async () => {
    let reads = 0;
    start(declining, { readFacts: () => ((reads += 1), Promise.reject(new Error('Stripe did not answer'))) });
    const submission = await refundCase(stores);
    expect((await decisions.submit(submission, 'sam')).status).toBe('created');
    expect(await until('the case failed', () => statusOf(submission.caseId), settled, 20_000)).toMatchObject({ state: 'failed', attempts: 5, error: { code: 'premise_read_failed' } });
    expect(reads).toBe(5);
  });
});

describe('what a case says while an outage is waited out, and after', () => {
  it('waiting out a decider outage, the queued case says it is tried again by itself and until when, not to submit it again', async () => {
    start(outage(() => true), { deciderRetry: { forMs: 60_000, maxDelayMs: 40 } });
    const submission = await refundCase(stores);
    expect((await decisions.submit(submission, 'sam')).status).toBe('created');
    const queued = await until('queued with the outage', () => statusOf(submission.caseId), (status) => status?.state === 'queued' && status.error !== null, 20_000);
    expect(queued?.error?.code).toBe('decider_unavailable');
    expect(queued?.error?.message).toMatch(/^The Messages API is overloaded \(529\)\. The case is tried again by itself until \d{4}-\d\d-\d\dT[0-9:.]+Z \(INTERLOCK_RETRY_FOR_MS\), and fails if it is still unavailable then\.$/);
  });

  it('failed after Stripe was unavailable for its facts for the whole window, the case does not say it is retried', async () => {
    const unavailable = () => new StripeUnavailable('Stripe answered 503', { stripeStatus: 503, stripeCode: null, requestId: null, retryAfterMs: null, rateLimited: false, outcomeUnknown: false });
    start(declining, { readFacts: () => Promise.reject(unavailable()), deciderRetry: { forMs: 300, maxDelayMs: 40 } });
    const submission = await refundCase(stores);
    expect((await decisions.submit(submission, 'sam')).status).toBe('created');
    const failed = await until('the case failed', () => statusOf(submission.caseId), settled, 20_000);
    expect(failed).toMatchObject({ state: 'failed', error: { code: 'premise_read_failed' } });
    expect(failed?.error?.message).toMatch(/nothing was asked or proposed\. It was unavailable for \d+ s \(\d+ tries, INTERLOCK_RETRY_FOR_MS=300\)\.$/);
  });
});

describe('afterDeciderOutage (pure)', () => {
  const policy = { firstDelayMs: 2_000, maxDelayMs: 300_000, forMs: 6 * 3_600_000 };

  it('doubles from the first delay up to the longest, each try in a later run of the job, and gives up once the window has passed', () => {
    let state = null;
    const waits: number[] = [];
    let now = 1_000_000;
    for (let run = 1; run <= 12; run += 1) {
      const next = afterDeciderOutage(state, now, run, null, policy);
      if (next.kind !== 'retry') throw new Error('gave up early');
      waits.push(next.at - now);
      expect(next.state).toEqual({ failures: run, failingSince: 1_000_000, started: run });
      state = next.state;
      now = next.at;
    }
    expect(waits).toEqual([2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000, 300_000, 300_000, 300_000]);
    // Near its end the last try is made at the end of the window, then it gives up.
    const late = afterDeciderOutage(state, 1_000_000 + policy.forMs - 1_000, 13, null, policy);
    expect(late).toMatchObject({ kind: 'retry', at: 1_000_000 + policy.forMs });
    expect(afterDeciderOutage(late.state, 1_000_000 + policy.forMs, 14, null, policy)).toMatchObject({ kind: 'give-up', state: { failures: 14, failingSince: 1_000_000 } });
  });

  it("honours a longer wait the API asked for, up to 15 min; a shorter one does not shorten the doubling", () => {
    expect(afterDeciderOutage(null, 0, 1, 60_000, policy)).toMatchObject({ kind: 'retry', at: 60_000 });
    expect(afterDeciderOutage(null, 0, 1, 3_600_000, policy)).toMatchObject({ kind: 'retry', at: MAX_ASKED_WAIT_MS });
    expect(afterDeciderOutage(null, 0, 1, 10, policy)).toMatchObject({ kind: 'retry', at: 2_000 });
  });

  it('a job run again afresh (its attemptsStarted reset, no later than the run that noted the outage) starts a new window', () => {
    const old = { failures: 30, failingSince: 0, started: 30 };
    expect(afterDeciderOutage(old, policy.forMs + 5, 1, null, policy)).toEqual({ kind: 'retry', at: policy.forMs + 5 + 2_000, state: { failures: 1, failingSince: policy.forMs + 5, started: 1 } });
    expect(afterDeciderOutage(old, policy.forMs + 5, 31, null, policy)).toMatchObject({ kind: 'give-up' });
  });
});
