// Rule (README "Cases" step 6): only a fact read Stripe did not answer (a 429, a 5xx, a dropped connection, no answer
// in time) is waited out, up to INTERLOCK_RETRY_FOR_MS; a fact read that failed otherwise uses the job's attempts, then
// fails the case with premise_read_failed. A server at STRIPE_API_BASE that is not Stripe and answers every read 404
// {"message":"Not Found"} is a misconfiguration waiting does not mend: the case fails after the job's 5 attempts, not
// after 6 h. StripeUnavailable.passing says which answers are an outage.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { caseEffectId, createDecisionsQueue, startDecisionsWorker, type DecisionsQueue, type DecisionsWorker } from '../../queues/decisions.js';
import { CREDIT_FACTS, openStores, REFUND_FACTS, type Decider, type Stores } from '../../src/interlock.js';
import { createStripeClient } from '../../src/stripe/client.js';
import { createRefundTarget } from '../../src/stripe/refund-target.js';
import { StripeUnavailable } from '../../src/stripe/errors.js';
import { removePrefixes, testConfig, testKey } from '../support/harness.js';
import { refundCase, until } from './case-rig.js';

const config = testConfig({ keyPrefix: `fn${randomBytes(5).toString('hex')}`, retryMaxDelayMs: 40 });
let stores: Stores;
let decisions: DecisionsQueue;
let worker: DecisionsWorker;
let server: Server;
let hits = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    hits += 1;
    req.resume();
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ message: 'Not Found' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stores = await openStores(config, { signingKey: testKey().key });
  decisions = createDecisionsQueue(stores, { attempts: 5, backoffMs: 10 });
});
afterAll(async () => {
  await worker?.close(true);
  await decisions.close();
  await stores.close();
  await removePrefixes([config.keyPrefix]);
  server.close();
});

const declining: Decider = { name: 'rules', decide: async () => ({ action: 'decline', amountCents: null, reason: 'x', model: 'scripted', text: 'decline' }) };

it('a non-Stripe 404 on every fact read fails the case after the job attempts (not waited out as an outage)', async () => {
  const port = (server.address() as AddressInfo).port;
  const target = createRefundTarget(createStripeClient({ secretKey: 'sk_test_interlockReviewLast0001', apiBase: `http://127.0.0.1:${port}` }));
  let lastError: unknown;
  worker = startDecisionsWorker(stores, {
    decider: declining,
    effects: { propose: () => Promise.reject(new Error('nothing proposed')) },
    readFacts: async (effect, names, context) => {
      try {
        return await target.readFacts(context.effectId, effect, names, { timeoutMs: context.timeoutMs });
      } catch (error) {
        lastError = error;
        throw error;
      }
    },
    premises: { refund: REFUND_FACTS, credit: CREDIT_FACTS },
    concurrency: 1,
  });
  const submission = await refundCase(stores);
  expect((await decisions.submit(submission, 'sam')).status).toBe('created');
  // Give it far more than 5 attempts' worth of tries (the 40 ms max delay makes each wait short).
  const status = await until('the case failed', async () => (await stores.cases.get(submission.caseId))?.status, (s) => s !== undefined && s.state === 'failed', 8_000).catch(async (error: Error) => {
    const job = await decisions.queue.getJob(caseEffectId(submission.caseId));
    throw new Error(`${error.message}\n fact reads so far (HTTP hits): ${hits}; job attemptsMade=${job?.attemptsMade}; last read error: ${(lastError as Error)?.name}: ${(lastError as Error)?.message}`);
  });
  expect(status).toMatchObject({ state: 'failed', error: { code: 'premise_read_failed' } });
  expect((await decisions.queue.getJob(caseEffectId(submission.caseId)))?.attemptsMade).toBe(5);
});

it('an outage that passes: no answer, a 429, a 5xx (a proxy\'s too); not a 4xx, nor a 2xx that is not Stripe\'s', () => {
  const of = (stripeStatus: number | null, more: { rateLimited?: boolean; notStripe?: boolean } = {}) =>
    new StripeUnavailable('x', { stripeStatus, stripeCode: null, requestId: null, retryAfterMs: null, rateLimited: more.rateLimited ?? false, outcomeUnknown: false, ...(more.notStripe === undefined ? {} : { notStripe: more.notStripe }) }).passing;
  expect([of(null), of(429), of(500), of(503), of(429, { rateLimited: true }), of(502, { notStripe: true })]).toEqual([true, true, true, true, true, true]);
  expect([of(400), of(404), of(409), of(200, { notStripe: true }), of(404, { notStripe: true }), of(null, { notStripe: true })]).toEqual([false, false, false, false, false, false]);
});
