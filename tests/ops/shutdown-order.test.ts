// A stopping `serve` stops taking HTTP requests, and finishes the ones in progress, before it closes any queue or
// store. Its port is taken before the workers start (a start refused on its port sends nothing), so closing in
// reverse order of starting used to close it almost last: the API went on taking refunds while the effects queue it
// queues through was already closed, and a refund taken then was recorded, its job never added, and answered
// "nothing was recorded". No worker, recovery pass or restart judges a proposal that has no job.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { effectIdFor } from '../../src/interlock.js';
import { openPipeline, spawnWorker, type Pipeline } from '../pipeline/pipeline-support.js';
import { pay, sleep, startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';

let world: StripeWorld;
let pipeline: Pipeline;
beforeAll(async () => {
  world = await startStripeWorld();
  pipeline = await openPipeline(world.sandbox);
});
afterAll(async () => {
  await pipeline?.close();
  await world?.close();
});

const TOKEN = `tok_${randomBytes(12).toString('hex')}`;

/** POST /v1/refunds; status -1 when no answer came (the port was closed). */
async function proposeRefund(url: string, body: object): Promise<{ status: number; body: string }> {
  try {
    const response = await fetch(`${url}/v1/refunds`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: response.status, body: await response.text() };
  } catch (error) {
    return { status: -1, body: String(error) };
  }
}

async function refundable(name: string): Promise<{ paymentIntent: string; approval: string }> {
  const prefix = pipeline.config.keyPrefix;
  const { paymentIntent } = await pay(world.stripe, 'pm_card_visa', 5_000);
  const approval = `ap_${name}_${prefix}`;
  await pipeline.stores.approvals.grant({ id: approval, approver: 'dana@support', capCents: 2_000, expiresAt: Date.now() + 3_600_000, maxUses: 1, scope: `payment:${paymentIntent}` });
  return { paymentIntent, approval };
}

async function journalOf(effectId: string): Promise<string[]> {
  return (await pipeline.stores.journal.receipt(effectId))?.entries.map((entry) => entry.kind) ?? [];
}

function urlOf(logs: string): string {
  const line = logs.split('\n').find((text) => text.includes('"msg":"interlock serving"')) ?? '';
  return (JSON.parse(line) as { url: string }).url;
}

it('a refund sent while serve stops (its send in progress holding the stop) is refused unrecorded, never recorded and left without a job', async () => {
  const prefix = pipeline.config.keyPrefix;
  const a = await refundable('a');
  const b = await refundable('b');
  const serve = spawnWorker(pipeline.env({ INTERLOCK_API_TOKENS: `sam:support:${TOKEN}` }), ['serve', '--roles', 'worker,api', '--port', '0']);
  try {
    await serve.ready;
    const url = urlOf(serve.logs());
    // Stripe holds refund A's send for 6 s: the stop waits for it.
    await world.sandbox.control.slowDown({ path: '/v1/refunds', method: 'POST', ms: 6_000, count: 1 });
    const first = await proposeRefund(url, { request_id: `case-a-${prefix}`, payment_intent: a.paymentIntent, amount: 2_000, approval: a.approval });
    expect(first.status).toBe(202);
    const effectA = (JSON.parse(first.body) as { effect_id: string }).effect_id;
    for (let i = 0; i < 100 && !(await journalOf(effectA)).includes('DISPATCHED'); i += 1) await sleep(100);
    serve.child.kill('SIGTERM');
    await sleep(1_000);
    const second = await proposeRefund(url, { request_id: `case-b-${prefix}`, payment_intent: b.paymentIntent, amount: 2_000, approval: b.approval });
    expect(await serve.exited).toEqual({ code: 0, signal: null });
    const effectB = effectIdFor({ requestId: `case-b-${prefix}`, effect: { kind: 'refund', paymentIntent: b.paymentIntent, amount: 2_000 } });
    const recorded = await journalOf(effectB);
    const job = await pipeline.queue.queue.getJob(effectB);
    expect(recorded.length === 0 || job !== undefined, `refund B recorded (${recorded.join(',')}) without a job; the API answered ${second.status}: ${second.body}`).toBe(true);
    expect(recorded).toEqual([]);
    // The send in progress at the stop finished, and its answer was recorded.
    expect(await journalOf(effectA)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
  } finally {
    await serve.stop(2_000);
  }
}, 90_000);

it('an API-only process stopped while a refund request reads its facts finishes that request: recorded, queued and answered 202', async () => {
  const prefix = pipeline.config.keyPrefix;
  const c = await refundable('c');
  const serve = spawnWorker(pipeline.env({ INTERLOCK_API_TOKENS: `sam:support:${TOKEN}` }), ['serve', '--roles', 'api', '--port', '0']);
  try {
    await serve.ready;
    const url = urlOf(serve.logs());
    // Stripe takes 1.5 s to answer this request's premise read; the stop comes 0.5 s into it.
    await world.sandbox.control.slowDown({ path: `/v1/payment_intents/${c.paymentIntent}`, ms: 1_500, count: 1 });
    const answer = proposeRefund(url, { request_id: `case-c-${prefix}`, payment_intent: c.paymentIntent, amount: 2_000, approval: c.approval });
    await sleep(500);
    serve.child.kill('SIGTERM');
    const { status, body } = await answer;
    expect(await serve.exited).toEqual({ code: 0, signal: null });
    const effectC = effectIdFor({ requestId: `case-c-${prefix}`, effect: { kind: 'refund', paymentIntent: c.paymentIntent, amount: 2_000 } });
    expect(await journalOf(effectC), `the API answered ${status}: ${body}`).toEqual(['PROPOSED']);
    expect(await pipeline.queue.queue.getJob(effectC), `recorded without a job; the API answered ${status}: ${body}`).toBeDefined();
    expect(status).toBe(202);
  } finally {
    await serve.stop(2_000);
  }
}, 90_000);
