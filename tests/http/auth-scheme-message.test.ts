// Rule: an error must say what the caller got wrong. A caller who sends a token the service knows, but without the
// `Bearer ` scheme (`Authorization: <token>`, or `curl -u <token>:` = Basic, the way the README's own sandbox lines
// authenticate), must not be told the token is unknown ("Check INTERLOCK_API_TOKENS or the tokens printed at start"):
// the token is right, the header form is wrong, so the message should name `Authorization: Bearer <token>`.
import express from 'express';
import { pino } from 'pino';
import request from 'supertest';
import { expect, it } from 'vitest';
import { authenticate } from '../../webhooks/api/auth.js';
import { errorHandler } from '../../webhooks/api/errors.js';
import { createTokenRegistry, parseTokenEntries } from '../../webhooks/api/tokens.js';

const TOKEN = 'rvReadmeSupportToken_0123456789';
const registry = createTokenRegistry(parseTokenEntries(`sam:support:${TOKEN}`, 'test'));

function answer(authorization: string): { code?: string; message?: string } {
  const middleware = authenticate(registry, null);
  let error: unknown = null;
  const req = { headers: { authorization }, path: '/v1/effects' } as never;
  middleware(req, {} as never, (e?: unknown) => {
    error = e ?? null;
  });
  return (error ?? {}) as { code?: string; message?: string };
}

it('a known token with the Bearer scheme is accepted (control)', () => {
  expect(answer(`Bearer ${TOKEN}`).code).toBeUndefined();
});

it.each([
  ['the bare token', TOKEN],
  ['Basic auth of the token (curl -u TOKEN:)', `Basic ${Buffer.from(`${TOKEN}:`).toString('base64')}`],
  ['an empty Bearer', 'Bearer '],
])('%s is refused with a message naming the Bearer scheme, not "token unknown"', (_label, header) => {
  const error = answer(header);
  expect(error.code).toBe('unauthenticated');
  expect(error.message).not.toMatch(/not one this service knows/);
  expect(error.message).toMatch(/Authorization: Bearer/);
});

it('over HTTP the wrong form is answered as a missing token is (401, WWW-Authenticate: Bearer); a well-formed unknown token is still "not one this service knows"', async () => {
  const app = express();
  app.get('/v1/effects', authenticate(registry, null), (_req, res) => res.json({ ok: true }));
  app.use(errorHandler(pino({ level: 'silent' })));
  const missing = await request(app).get('/v1/effects');
  expect(missing.status).toBe(401);
  for (const header of [TOKEN, `Basic ${Buffer.from(`${TOKEN}:`).toString('base64')}`, 'Bearer ', 'Bearer']) {
    const answer = await request(app).get('/v1/effects').set('Authorization', header);
    expect(answer.status, header).toBe(missing.status);
    expect(answer.headers['www-authenticate']).toBe(missing.headers['www-authenticate']);
    expect(answer.body.error.message).toContain('send `Authorization: Bearer <token>`');
  }
  const unknown = await request(app).get('/v1/effects').set('Authorization', 'Bearer rvReadmeUnknownToken_0123456789');
  expect(unknown.status).toBe(401);
  expect(unknown.body.error.message).toMatch(/not one this service knows/);
  expect((await request(app).get('/v1/effects').set('Authorization', `bearer  ${TOKEN} `)).status).toBe(200);
});
