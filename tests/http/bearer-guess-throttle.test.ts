// Rule: guessing tokens is throttled per client address (and host name) on every door that checks a token, not only
// on the page's sign-in form. An unknown bearer token on the API, /metrics, /admin/queues or a page counts against the
// same allowance the sign-in form spends (one counter: 10 unknown tokens, then 10 a minute, guesses through any door
// counted together); past it the token is not checked, the right one neither (as the sign-in form answers), and the
// API says so in its error format: 429 `rate_limited` with Retry-After. The same unknown token sent again is no new
// guess and spends nothing more. The OpenAPI document lists the 429 on every route that takes a token.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { bearer, rigSuite, TOKENS } from './rig.js';

/** A client address of its own for each test (the proxy in front, on loopback, names it), so none spends another's allowance. */
let addresses = 0;
const address = () => `203.0.113.${(addresses += 1)}`;
const guess = (i: number) => `itk_guess_${i}_${randomBytes(12).toString('hex')}`;

describe('unknown bearer tokens, per client address', () => {
  const rig = rigSuite({ config: { trustProxy: 'loopback' }, metrics: true });
  const get = (path: string, token: string, from: string) => request(rig.app).get(path).set(bearer(token)).set('X-Forwarded-For', from);

  it('answers 401 to ten, then 429 rate_limited with Retry-After before checking any token, the right one too; another address goes on', async () => {
    const from = address();
    const statuses: number[] = [];
    for (let i = 0; i < 10; i += 1) statuses.push((await get('/v1/effects', guess(i), from)).status);
    expect(statuses).toEqual(Array<number>(10).fill(401));
    const refused = await get('/v1/effects', guess(10), from);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(refused.body.error.message).toMatch(/does not know/);
    expect(refused.body.error.message).toMatch(/Retry after \d+ s/);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    const right = await get('/v1/effects', TOKENS.auditor, from);
    expect(right.status).toBe(429);
    expect(right.body.error.code).toBe('rate_limited');
    expect((await get('/v1/effects', TOKENS.auditor, '198.51.100.7')).status).toBe(200);
  });

  it('counts the page sign-in form and the API together', async () => {
    const from = address();
    for (let i = 0; i < 5; i += 1) {
      const signIn = await request(rig.app).post('/ui/sign-in').type('form').set('sec-fetch-site', 'same-origin').set('X-Forwarded-For', from).send({ token: guess(i) });
      expect(signIn.status).toBe(401);
    }
    for (let i = 5; i < 10; i += 1) expect((await get('/v1/effects', guess(i), from)).status).toBe(401);
    expect((await get('/v1/effects', TOKENS.auditor, from)).status).toBe(429);
    const signIn = await request(rig.app).post('/ui/sign-in').type('form').set('sec-fetch-site', 'same-origin').set('X-Forwarded-For', from).send({ token: TOKENS.auditor });
    expect(signIn.status).toBe(429);
  });

  it('counts unknown tokens sent to /metrics, /admin/queues and the page as well', async () => {
    const from = address();
    const paths = ['/metrics', '/admin/queues', '/ui'];
    for (let i = 0; i < 10; i += 1) expect((await get(paths[i % 3] ?? '/metrics', guess(i), from)).status).not.toBe(200);
    for (const path of ['/metrics', '/admin/queues', '/ui', '/v1/keys']) {
      const answer = await get(path, TOKENS.operator, from);
      expect(answer.status, path).toBe(429);
      expect(Number(answer.headers['retry-after']), path).toBeGreaterThan(0);
    }
  });

  it('spends the allowance once for the same unknown token sent again (a script retrying a stale token guesses nothing)', async () => {
    const from = address();
    const stale = guess(0);
    for (let i = 0; i < 30; i += 1) expect((await get('/v1/effects', stale, from)).status).toBe(401);
    expect((await get('/v1/effects', TOKENS.auditor, from)).status).toBe(200);
  });

  it('lists the 429 on every route that takes a token', async () => {
    const doc = (await request(rig.app).get('/v1/openapi.json')).body as { paths: Record<string, Record<string, { security: unknown[]; responses: Record<string, { description: string }> }>> };
    const missing: string[] = [];
    let routes = 0;
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (operation.security.length === 0) continue;
        routes += 1;
        if (!/does not know/.test(operation.responses['429']?.description ?? '')) missing.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(routes).toBeGreaterThan(10);
    expect(missing).toEqual([]);
  });
});
