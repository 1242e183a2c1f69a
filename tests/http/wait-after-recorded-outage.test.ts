// Rule: `?wait=` is bounded whatever Redis does, and an answer after the proposal or case was written never says
// "nothing was recorded". Redis cut off right after the write, the first wait of the process (whose queue event stream
// still has to open, on a connection that waits out any outage) answers, and its 503 says the request is recorded and
// will be carried out, and to send the same request again to learn its outcome: a caller told "nothing was recorded"
// may decide again under a new id, and the money moves twice. So does a wait whose stream was open already.
import { setTimeout as sleep } from 'node:timers/promises';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL } from '../support/harness.js';
import { startRedisCutProxy, type RedisCutProxy } from '../support/redis-cut-proxy.js';
import { approvalBody, bearer, caseBody, refundBody, startRig, TOKENS, uid, type Rig } from './rig.js';

let proxy: RedisCutProxy;
let rig: Rig;

beforeAll(async () => {
  const url = new URL(REDIS_URL);
  proxy = await startRedisCutProxy({ host: url.hostname, port: Number(url.port || 6379) });
  // Every connection of the rig goes through the proxy, so a cut is an outage for the store and the queues alike.
  rig = await startRig({ config: { redisUrl: proxy.url, keyPrefix: `wao${uid()}`, redisCommandTimeoutMs: 1_000 } });
  // The rig's own reader reports each refused reconnect during a cut; nothing here reads it then.
  rig.redis.on('error', () => undefined);
});
afterAll(async () => {
  proxy.heal();
  await rig.close();
  await proxy.close();
});

type Answer = { status: number; code: unknown; message: string };

/** The answer to `sent`, or 'no answer' once `ms` passed without one (a wait hanging for the outage's length). */
async function answerOf(sent: request.Test, ms = 20_000): Promise<Answer | 'no answer'> {
  const answered = sent.then((res) => {
    const error = (res.body as { error?: { code?: unknown; message?: unknown } }).error;
    return { status: res.status, code: error?.code, message: String(error?.message ?? JSON.stringify(res.body)) };
  });
  return Promise.race([answered, sleep(ms).then(() => 'no answer' as const)]);
}

/** Cuts Redis off once the route reaches the wait, the proposal or case written by then. */
function cutBeforeWait<A extends unknown[], R>(wait: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args: A) => {
    proxy.cut();
    return wait(...args);
  };
}

async function grant(): Promise<string> {
  const approval = approvalBody({ max_uses: 10 });
  expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
  return String(approval.id);
}

function expectRecordedAnswer(answer: Answer | 'no answer', recorded: RegExp, again: RegExp): void {
  expect(answer).not.toBe('no answer');
  if (answer === 'no answer') return;
  expect(answer.status).toBe(503);
  expect(answer.code).toBe('redis_unavailable');
  expect(answer.message).not.toMatch(/nothing was recorded/i);
  expect(answer.message).toMatch(recorded);
  expect(answer.message).toMatch(/its outcome is not known yet/);
  expect(answer.message).toMatch(again);
}

describe('a ?wait that meets a Redis outage after the write', () => {
  it('POST /v1/refunds?wait=1, the first wait of the process: answers 503 saying the proposal is recorded', { timeout: 60_000 }, async () => {
    const approval = await grant();
    const body = refundBody({ approval });
    const waitFor = rig.queue.waitFor.bind(rig.queue);
    rig.queue.waitFor = cutBeforeWait(waitFor);
    try {
      const answer = await answerOf(request(rig.app).post('/v1/refunds?wait=1').set(bearer(TOKENS.support)).send(body));
      expectRecordedAnswer(answer, new RegExp(`Request ${String(body.request_id)} is recorded \\(effect [0-9a-f]{64}\\) and queued: it will be carried out`), /Send the same request again \(the same request_id and payload\)/);
    } finally {
      rig.queue.waitFor = waitFor;
      proxy.heal();
    }
  });

  it('POST /v1/cases?wait=1, the first wait on cases: answers 503 saying the case is stored', { timeout: 60_000 }, async () => {
    const approval = await grant();
    const body = caseBody({ approval });
    const waitFor = rig.decisions.waitFor.bind(rig.decisions);
    rig.decisions.waitFor = cutBeforeWait(waitFor);
    try {
      const answer = await answerOf(request(rig.app).post('/v1/cases?wait=1').set(bearer(TOKENS.support)).send(body));
      expectRecordedAnswer(answer, new RegExp(`Case ${String(body.case_id)} is stored and queued: it will be decided`), /Submit the same case again \(the same case_id and payload\)/);
    } finally {
      rig.decisions.waitFor = waitFor;
      proxy.heal();
    }
  });

  it('POST /v1/refunds?wait=1 whose event stream is open already: the 503 says the proposal is recorded', { timeout: 60_000 }, async () => {
    const approval = await grant();
    // The stream opens (again, after the cut above) with Redis answering.
    expect((await answerOf(request(rig.app).post('/v1/refunds?wait=0.2').set(bearer(TOKENS.support)).send(refundBody({ approval }))))).not.toBe('no answer');
    const body = refundBody({ approval });
    const waitFor = rig.queue.waitFor.bind(rig.queue);
    rig.queue.waitFor = cutBeforeWait(waitFor);
    try {
      const answer = await answerOf(request(rig.app).post('/v1/refunds?wait=1').set(bearer(TOKENS.support)).send(body));
      expectRecordedAnswer(answer, new RegExp(`Request ${String(body.request_id)} is recorded`), /Send the same request again/);
    } finally {
      rig.queue.waitFor = waitFor;
      proxy.heal();
    }
  });
});
