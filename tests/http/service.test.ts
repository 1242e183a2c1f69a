// The service around the routes: the request log (request id, role and token name, never the token), errors that
// never carry a stack or a secret, probes with injected checks, alerts and recovery from injected parts, and the
// seam the webhook route is mounted through.
import { randomBytes } from 'node:crypto';
import express from 'express';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { openStores } from '../../src/interlock.js';
import { createApp, queueCheck, storeChecks } from '../../webhooks/app.js';
import { approvalBody, bearer, refundBody, rigSuite, ROLE_TOKENS, tokenRegistry, TOKENS } from './rig.js';

const rig = rigSuite();

function appWith(deps: Partial<Parameters<typeof createApp>[0]>) {
  return createApp({ stores: rig.stores, effects: rig.queue, readFacts: async () => ({}), tokens: tokenRegistry(), logger: rig.stores.logger, ...deps });
}

describe('the request log', () => {
  it('one line per request with its id, the role and the token name; never a token, a header or a body', async () => {
    await request(rig.app).get('/v1/effects?limit=1').set(bearer(TOKENS.auditor)).set('X-Request-Id', 'req-audit-1');
    const approval = approvalBody();
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ request_id: 'case-logged', approval: approval.id, decision: { model: 'm', text: 'customer secret note' } }));
    await request(rig.app).get('/v1/effects').set(bearer('itk_wrong_token_0123456789'));
    const line = rig.logs.find((entry) => entry.reqId === 'req-audit-1');
    expect(line).toMatchObject({ reqId: 'req-audit-1', role: 'auditor', token: 'aud', method: 'GET', url: '/v1/effects?limit=…', status: 200, ms: expect.any(Number) });
    expect(rig.logs.find((entry) => entry.url === '/v1/refunds')).toMatchObject({ role: 'support', token: 'sam', status: 202 });
    const text = rig.logText();
    for (const secret of [...Object.values(TOKENS), 'itk_wrong_token_0123456789', 'customer secret note']) expect(text).not.toContain(secret);
    expect(text).not.toMatch(/authorization/i);
  });

  it('answers the request id it was given, or one it made, in X-Request-Id', async () => {
    expect((await request(rig.app).get('/healthz').set('X-Request-Id', 'abc-123')).headers['x-request-id']).toBe('abc-123');
    const made = (await request(rig.app).get('/healthz').set('X-Request-Id', 'not <ok>')).headers['x-request-id'];
    expect(made).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('masks Stripe keys and webhook secrets in what it logs', async () => {
    await request(rig.app).get('/v1/nothing/sk_test_4eC39HqLyjWDarjtT1zdp7dc').set(bearer(TOKENS.auditor));
    await request(rig.app).get('/v1/nothing/whsec_abcdefghijklmnop').set(bearer(TOKENS.auditor));
    const text = rig.logText();
    expect(text).toContain('sk_test_…p7dc');
    expect(text).not.toContain('4eC39HqLyjWDarjtT1zdp7dc');
    expect(text).not.toContain('whsec_abcdefghijklmnop');
  });

  // Rule: the request log keeps the query's parameter names, never their values. A token put in the query string
  // (?access_token=<token>) was logged in clear when it had no prefix redactSecrets knows (a generated token has none).
  it('never logs a query value: a token sent in the query string, with no prefix to mask it by, is not written on a refused or a public route', async () => {
    const token = randomBytes(32).toString('base64url');
    expect((await request(rig.app).get(`/v1/effects?access_token=${token}&limit=1`)).status).toBe(401);
    await request(rig.app).get(`/healthz?${token}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(rig.logText()).not.toContain(token);
    expect(rig.logs.map((line) => line.url)).toEqual(expect.arrayContaining(['/v1/effects?access_token=…&limit=…', '/healthz?…']));
  });
});

describe('errors', () => {
  it('an unknown route is 404 from the registry, never an HTML page', async () => {
    const answer = await request(rig.app).get('/v1/nope').set(bearer(TOKENS.operator));
    expect(answer.status).toBe(404);
    expect(answer.headers['content-type']).toMatch(/application\/json/);
    expect(answer.body.error.code).toBe('not_found');
    expect((await request(rig.app).delete('/v1/refunds').set(bearer(TOKENS.support))).status).toBe(405);
  });

  it('a fault of the service is a 500 with a sentence and the request id: no stack, no message of the fault', async () => {
    const broken = appWith({
      alerts: async () => {
        throw new Error('boom at /srv/interlock/webhooks/api/ops-routes.ts:12 with sk_live_abcdefghijklmnop');
      },
    });
    const answer = await request(broken).get('/v1/alerts').set(bearer(TOKENS.auditor)).set('X-Request-Id', 'req-fault');
    expect(answer.status).toBe(500);
    expect(answer.body).toEqual({ error: { code: 'internal', message: 'Something went wrong inside the service. The request id is req-fault; the service log has the detail.' } });
    expect(answer.text).not.toMatch(/boom|\.ts:|at |sk_live/);
  });

  it('a Redis that stopped answering is 503 redis_unavailable, retryable', async () => {
    const down = appWith({
      alerts: async () => {
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
      },
    });
    const answer = await request(down).get('/v1/alerts').set(bearer(TOKENS.auditor));
    expect(answer.status).toBe(503);
    expect(answer.body.error.code).toBe('redis_unavailable');
    expect(answer.headers['retry-after']).toBe('1');
  });

  it('a path that cannot be decoded is 400, and a body in another charset 415', async () => {
    expect((await request(rig.app).get('/v1/effects/%E0%A4%A').set(bearer(TOKENS.auditor))).status).toBe(400);
    const latin = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).set('Content-Type', 'application/json; charset=latin1').send('{}');
    expect(latin.status).toBe(415);
    const json = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).set('Content-Type', 'application/json').send('[]');
    expect(json.status).toBe(400);
    expect(json.body.error.fields).toEqual([{ path: 'body', message: 'Invalid input: expected object, received array' }]);
  });

  it('a missing field is named "is required"; an unknown one "is not a field", naming the field it spells but for case or _', async () => {
    const answer = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send({ request_id: 'case-x', amount: 1, approval: 'ap_1', paymentIntent: 'pi_1', note: 'x' });
    expect(answer.body.error.fields).toEqual([
      { path: 'payment_intent', message: 'is required' },
      { path: 'paymentIntent', message: 'is not a field of this object (did you mean payment_intent?)' },
      { path: 'note', message: 'is not a field of this object (a typo?)' },
    ]);
  });

  it('an unknown query parameter is answered with the parameters the route takes, or the one it spells', async () => {
    const cursor = await request(rig.app).get('/v1/effects?cursor=abc').set(bearer(TOKENS.auditor));
    expect(cursor.status).toBe(400);
    expect(cursor.body.error.fields).toEqual([{ path: 'query.cursor', message: 'is not a field of this object (it takes request, subject, state, outcome, limit, starting_after)' }]);
    const spelled = await request(rig.app).get('/v1/effects?startingAfter=abc').set(bearer(TOKENS.auditor));
    expect(spelled.body.error.fields).toEqual([{ path: 'query.startingAfter', message: 'is not a field of this object (did you mean starting_after?)' }]);
  });
});

describe('probes, alerts, recovery', () => {
  it('/healthz answers while the process is up; /readyz runs the checks and names the failed ones', async () => {
    expect((await request(rig.app).get('/healthz')).body).toEqual({ status: 'ok' });
    const ready = await request(rig.app).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks.map((check: { name: string }) => check.name)).toEqual(['redis', 'redis_writable', 'redis_durable']);
    const unready = appWith({
      readiness: [
        { name: 'redis', check: async () => true },
        { name: 'queues', check: async () => ({ ok: false, detail: 'effects queue paused' }) },
        {
          name: 'stripe',
          check: async () => {
            throw new Error('Invalid API Key provided: sk_test_4eC39HqLyjWDarjtT1zdp7dc');
          },
        },
      ],
    });
    const answer = await request(unready).get('/readyz');
    expect(answer.status).toBe(503);
    expect(answer.body).toEqual({
      status: 'unready',
      checks: [
        { name: 'redis', ok: true, detail: null },
        { name: 'queues', ok: false, detail: 'effects queue paused' },
        { name: 'stripe', ok: false, detail: 'Invalid API Key provided: sk_test_…p7dc' },
      ],
    });
  });

  it('the checks the service is wired with: Redis, a write it takes, its durability and the queue connection', async () => {
    const wired = appWith({ readiness: [...storeChecks(rig.stores), queueCheck(rig.queue)] });
    const answer = await request(wired).get('/readyz');
    expect(answer.status).toBe(200);
    expect(answer.body.checks.map((check: { name: string; ok: boolean }) => [check.name, check.ok])).toEqual([
      ['redis', true],
      ['redis_writable', true],
      ['redis_durable', true],
      ['queues', true],
    ]);
  });

  it('/readyz fails the durability check on a Redis that can lose writes unless the operator opted out', async () => {
    const durable = (await rig.redis.config('GET', 'appendfsync')) as string[];
    const strictStores = await openStores({ ...rig.stores.config, unsafeDurability: false }, { logger: rig.stores.logger, signingKey: rig.stores.signingKey });
    const strict = createApp({ stores: strictStores, effects: rig.queue, readFacts: async () => ({}), tokens: tokenRegistry(), logger: rig.stores.logger });
    const answer = await request(strict).get('/readyz');
    const check = answer.body.checks.find((item: { name: string }) => item.name === 'redis_durable');
    if (durable[1] === 'always') expect(check.ok).toBe(true);
    else {
      expect(answer.status).toBe(503);
      expect(check).toMatchObject({ ok: false, detail: expect.stringContaining('appendfsync') });
    }
    await strictStores.close();
  });

  it('GET /v1/alerts answers what the alerts list gives (empty by default)', async () => {
    expect((await request(rig.app).get('/v1/alerts').set(bearer(TOKENS.auditor))).body).toEqual({ object: 'list', url: '/v1/alerts', data: [], has_more: false, next_starting_after: null });
    const asked: unknown[] = [];
    const alerting = appWith({
      alerts: async (query) => {
        asked.push(query);
        return { data: [{ id: 'exposure:e1', kind: 'exposure', centsAtStake: 4_500 }], next: null };
      },
    });
    const answer = await request(alerting).get('/v1/alerts?all=true&limit=5').set(bearer(TOKENS.operator));
    expect(answer.body.data).toEqual([{ id: 'exposure:e1', kind: 'exposure', centsAtStake: 4_500 }]);
    expect(asked).toEqual([{ all: true, limit: 5 }]);
  });

  it('GET /v1/alerts pages as the other lists do: `next_starting_after` in the answer, `?starting_after=` continues; a value that is no such cursor is 400', async () => {
    const { alerts } = rig.stores;
    const paged = appWith({ alerts: (query) => alerts.page(query) });
    const effect = (n: number) => `${n}`.padStart(64, 'e');
    for (let n = 0; n < 5; n += 1) await alerts.raise({ kind: 'late_landing', effectId: effect(n), subject: 'payment:pi_pages', centsAtStake: 100, refund: null, disputes: [], sentence: 's', action: 'a' });
    const seen: string[] = [];
    let next: string | null = null;
    do {
      const answer = await request(paged).get(`/v1/alerts?limit=2${next === null ? '' : `&starting_after=${encodeURIComponent(next)}`}`).set(bearer(TOKENS.auditor));
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...(answer.body.data as { id: string }[]).map((alert) => alert.id));
      next = answer.body.next_starting_after as string | null;
      expect(answer.body.has_more).toBe(next !== null);
    } while (next !== null && seen.length < 50);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.filter((id) => /^late_landing:e+\d$/.test(id)).sort()).toEqual([0, 1, 2, 3, 4].map((n) => `late_landing:${effect(n)}`));
    const bad = await request(paged).get('/v1/alerts?starting_after=abc').set(bearer(TOKENS.auditor));
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body.error.fields)).toContain('starting_after');
  });

  it('POST /v1/recover runs the injected pass; without one it is 503 not_available', async () => {
    expect((await request(rig.app).post('/v1/recover').set(bearer(TOKENS.operator))).status).toBe(503);
    let passes = 0;
    const recovering = appWith({
      recover: async () => {
        passes += 1;
        return { settled: [], waiting: [], skipped: [], unresolved: [], nextAt: null };
      },
    });
    const answer = await request(recovering).post('/v1/recover').set(bearer(TOKENS.operator)).send({});
    expect(answer.body).toEqual({ object: 'recovery', report: { settled: [], waiting: [], skipped: [], unresolved: [], nextAt: null } });
    expect(passes).toBe(1);
  });
});

describe('the mount seam', () => {
  it('a mounted route reads its raw body with no token, gets the request id and the log, and its errors the API answers', async () => {
    const seen: string[] = [];
    const mounted = appWith({
      mount(app) {
        app.post('/webhooks/stripe', express.raw({ type: '*/*' }), (req, res, next) => {
          seen.push(Buffer.isBuffer(req.body) ? req.body.toString('utf8') : typeof req.body);
          if (req.headers['stripe-signature'] === undefined) {
            next(Object.assign(new Error('No signatures found'), { status: 400 }));
            return;
          }
          res.status(200).json({ received: true, request_id: req.id });
        });
      },
    });
    const ok = await request(mounted).post('/webhooks/stripe').set('Stripe-Signature', 't=1,v1=x').set('Content-Type', 'application/json').send('{"id":"evt_1"}');
    expect(ok.status).toBe(200);
    expect(ok.body.request_id).toBe(ok.headers['x-request-id']);
    expect(seen).toEqual(['{"id":"evt_1"}']);
    const refused = await request(mounted).post('/webhooks/stripe').send('{}');
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('invalid_request');
    // The API behind it is unchanged.
    expect((await request(mounted).get('/v1/keys').set(bearer(ROLE_TOKENS.auditor))).status).toBe(200);
    expect((await request(mounted).get('/v1/keys')).status).toBe(401);
  });
});
