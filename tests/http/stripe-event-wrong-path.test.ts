// Rule: a request carrying a Stripe-Signature (only Stripe and `stripe listen` send one) to any path but the webhook
// route is answered 404 not_found naming POST /webhooks/stripe and the `stripe listen --forward-to` line, before any
// token is asked for: the 401 "needs a bearer token" it got sent users adding a token to `stripe listen`, which the
// route takes none of. A request without the header is answered as before (401 to a caller without a token, naming
// no route); a caller with a token is told the webhook route beside the OpenAPI document.
import { createHmac } from 'node:crypto';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { bearer, rigSuite, TOKENS } from './rig.js';

const SECRET = 'whsec_wrongpathtest0123456789';
const rig = rigSuite({ webhookSecret: SECRET, metrics: true });
const bare = rigSuite();

/** An event of a type the facts worker ignores, and its Stripe-Signature under SECRET. */
function signedEvent(): { body: string; signature: string } {
  const body = JSON.stringify({ id: 'evt_wrong_path', object: 'event', type: 'payment_intent.created', livemode: false, created: 1, data: { object: { id: 'pi_x', object: 'payment_intent' } } });
  const t = Math.floor(Date.now() / 1000);
  return { body, signature: `t=${t},v1=${createHmac('sha256', SECRET).update(`${t}.${body}`).digest('hex')}` };
}

describe('a Stripe event sent to the wrong path', () => {
  it('is answered 404 not_found naming POST /webhooks/stripe and the --forward-to line, with or without a token', async () => {
    const { body, signature } = signedEvent();
    for (const path of ['/webhook', '/v1/webhooks/stripe', '/stripe/webhooks', '/healthz', '/v1/cases', '/metrics', '/ui']) {
      for (const token of [null, TOKENS.operator]) {
        const asked = request(rig.app).post(path).set('Stripe-Signature', signature).set('Content-Type', 'application/json');
        const answer = await (token === null ? asked : asked.set(bearer(token))).send(body);
        expect({ path, token, status: answer.status, code: answer.body.error?.code }).toEqual({ path, token, status: 404, code: 'not_found' });
        const message = String(answer.body.error.message);
        expect(message).toContain(`No route POST ${path}: this request carries a Stripe-Signature`);
        expect(message).toContain('POST /webhooks/stripe');
        expect(message).toMatch(/`stripe listen --forward-to http:\/\/127\.0\.0\.1:\d+\/webhooks\/stripe`/);
        expect(message).not.toMatch(/bearer/i);
      }
    }
  });

  it('names no Host that is not a host and port: a placeholder stands for it', async () => {
    const { body, signature } = signedEvent();
    const answer = await request(rig.app).post('/webhook').set('Host', 'evil.example/"<b>').set('Stripe-Signature', signature).set('Content-Type', 'application/json').send(body);
    expect(answer.status).toBe(404);
    expect(answer.body.error.message).toContain('`stripe listen --forward-to http://127.0.0.1:<port>/webhooks/stripe`');
  });

  it('the webhook route itself, and with a trailing slash, still takes it', async () => {
    for (const path of ['/webhooks/stripe', '/webhooks/stripe/']) {
      const { body, signature } = signedEvent();
      const answer = await request(rig.app).post(path).set('Stripe-Signature', signature).set('Content-Type', 'application/json').send(body);
      expect({ path, status: answer.status, body: answer.body }).toEqual({ path, status: 200, body: { received: true, ignored: true } });
    }
  });

  it('at a process without the webhook route, says this process takes no Stripe events', async () => {
    const { body, signature } = signedEvent();
    const answer = await request(bare.app).post('/webhooks/stripe').set('Stripe-Signature', signature).set('Content-Type', 'application/json').send(body);
    expect([answer.status, answer.body.error?.code]).toEqual([404, 'not_found']);
    expect(answer.body.error.message).toContain('this process takes no Stripe events (it runs without the webhooks role)');
  });
});

describe('a request without a Stripe-Signature', () => {
  it('to an unknown path without a token: 401 as before, naming no route', async () => {
    const answer = await request(rig.app).post('/webhook').set('Content-Type', 'application/json').send('{}');
    expect([answer.status, answer.body.error?.code, answer.body.error?.message]).toEqual([401, 'unauthenticated', 'This route needs a bearer token: send `Authorization: Bearer <token>`.']);
    expect(answer.text).not.toContain('/webhooks/stripe');
  });

  it('to an unknown path with a token: 404 naming the OpenAPI document and, beside it, the webhook route where there is one', async () => {
    const mounted = await request(rig.app).post('/webhook').set(bearer(TOKENS.operator)).set('Content-Type', 'application/json').send('{}');
    expect([mounted.status, mounted.body.error?.code, mounted.body.error?.message]).toEqual([404, 'not_found', "No route POST /webhook. GET /v1/openapi.json lists every route of the support API; Stripe's events go to POST /webhooks/stripe."]);
    const none = await request(bare.app).post('/webhook').set(bearer(TOKENS.operator)).set('Content-Type', 'application/json').send('{}');
    expect([none.status, none.body.error?.message]).toEqual([404, 'No route POST /webhook. GET /v1/openapi.json lists every route.']);
  });
});
