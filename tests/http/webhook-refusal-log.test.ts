// Rule: a refused webhook delivery is said in the service's own log, with its reason and what to do, since that is
// where the operator looks: `stripe listen` prints only `<-- [400] POST …`. A wrong secret's line names
// STRIPE_WEBHOOK_SECRET, `stripe listen` and the Dashboard endpoint's secret. The lines are limited, one per reason per
// interval, the next one saying how many of that reason were not logged, so a flood (or Stripe retrying an old
// endpoint for days) cannot fill the log; and the request log's line for the request carries the refusal's code, at
// debug only, since a line a request at warn would let anyone who reaches the route (a forged post needs no secret)
// write the log a line a request. A delivery Redis turned away (its memory full) is answered 503 naming why.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import express from 'express';
import { ReplyError } from 'ioredis';
import { pino } from 'pino';
import request from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import { createWebhookVerifier, signWebhookBody } from '../../src/interlock.js';
import { requestLog } from '../../webhooks/request-log.js';
import { stripeWebhookRouter } from '../../webhooks/stripe-route.js';

const SECRET = `whsec_${randomBytes(16).toString('hex')}`;
const OTHER = `whsec_${randomBytes(16).toString('hex')}`;
const EVERY_MS = 10_000;

type Record = { level: number; msg: string; reason?: string; notLogged?: number; code?: string; url?: string; status?: number };

let lines: Record[];
let clock: number;

/** The route behind the request log, as createApp mounts it, both logging into `lines`, its interval read off `clock`. */
function service(level: 'info' | 'debug' = 'debug', accept: () => Promise<undefined> = async () => undefined) {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record);
      done();
    },
  });
  const logger = pino({ level }, sink);
  return express()
    .use(requestLog(logger))
    .use(stripeWebhookRouter({ verify: createWebhookVerifier([SECRET], { mode: 'test' }), accept, logger, now: () => clock, refusalLogEveryMs: EVERY_MS }));
}

let seq = 0;
function post(app: express.Express, secret: string) {
  seq += 1;
  const body = JSON.stringify({ id: `evt_refusallog${seq}`, object: 'event', type: 'refund.created', livemode: false, created: Math.floor(Date.now() / 1000), data: { object: { id: `re_refusallog${seq}`, object: 'refund' } } });
  return request(app).post('/webhooks/stripe').set('content-type', 'application/json').set('stripe-signature', signWebhookBody(body, secret)).send(body);
}

const refusals = () => lines.filter((line) => line.msg.startsWith('webhook: refused'));

beforeEach(() => {
  lines = [];
  clock = 1_000_000;
});

describe('the webhook route logs why it refused a delivery', () => {
  it('a delivery signed with another secret: one warn line saying bad_signature and which secret to check, and the request line carries the code', async () => {
    const app = service();
    const answer = await post(app, OTHER);
    expect(answer.status).toBe(400);
    const [line, ...more] = refusals();
    expect(more).toEqual([]);
    expect(line?.level).toBe(40);
    expect(line?.reason).toBe('bad_signature');
    expect(line?.msg).toContain('(bad_signature)');
    expect(line?.msg).toContain('STRIPE_WEBHOOK_SECRET');
    expect(line?.msg).toContain('`stripe listen` printed');
    expect(line?.msg).toContain('Dashboard endpoint');
    expect(line?.msg).not.toContain(SECRET);
    const requestLine = lines.find((item) => item.url === '/webhooks/stripe');
    expect(requestLine).toMatchObject({ level: 20, status: 400, code: 'bad_signature', msg: 'POST /webhooks/stripe 400 bad_signature' });
  });

  it('a flood of refusals: one line per reason per interval, the next saying how many were not logged; another reason is not hidden by it', async () => {
    const app = service();
    for (let i = 0; i < 6; i += 1) expect((await post(app, OTHER)).status).toBe(400);
    expect(refusals().map((line) => line.reason)).toEqual(['bad_signature']);
    // Another reason within the same interval has a line of its own.
    expect((await request(app).post('/webhooks/stripe').set('content-type', 'application/json').send('{"id":"evt_x"}')).status).toBe(400);
    expect(refusals().map((line) => line.reason)).toEqual(['bad_signature', 'missing_signature']);
    clock += EVERY_MS;
    expect((await post(app, OTHER)).status).toBe(400);
    const last = refusals().at(-1);
    expect(last).toMatchObject({ reason: 'bad_signature', notLogged: 5 });
    expect(last?.msg).toContain('(5 more refused as bad_signature since the last logged)');
    // The count starts again after a line.
    clock += EVERY_MS;
    expect((await post(app, OTHER)).status).toBe(400);
    expect(refusals().at(-1)?.notLogged).toBeUndefined();
    // Every request still has its own request line, at debug.
    expect(lines.filter((item) => item.url === '/webhooks/stripe')).toHaveLength(9);
    expect(lines.filter((item) => item.url === '/webhooks/stripe').every((item) => item.level === 20)).toBe(true);
  });

  it('a flood of forged posts at the info level writes one line, not one a request', async () => {
    const app = service('info');
    for (let i = 0; i < 200; i += 1) expect((await post(app, OTHER)).status).toBe(400);
    expect(lines).toHaveLength(1);
    expect(refusals()).toHaveLength(1);
  });

  it('a delivery Redis turned away for its memory is answered 503 naming why', async () => {
    const app = service('info', async () => {
      throw new ReplyError("OOM command not allowed when used memory > 'maxmemory'.");
    });
    const answer = await post(app, SECRET);
    expect(answer.status).toBe(503);
    expect(answer.body.error.code).toBe('queue_unavailable');
    expect(answer.body.error.message).toContain('Redis turned it away: OOM: its memory is full under maxmemory');
  });

  it('an accepted delivery logs no refusal, and its request line no code', async () => {
    const app = service();
    expect((await post(app, SECRET)).status).toBe(200);
    expect(refusals()).toEqual([]);
    expect(lines.find((item) => item.url === '/webhooks/stripe')).toMatchObject({ status: 200, msg: 'POST /webhooks/stripe 200' });
    expect(lines.find((item) => item.url === '/webhooks/stripe')?.code).toBeUndefined();
  });
});
