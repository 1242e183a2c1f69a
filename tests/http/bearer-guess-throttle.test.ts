// Rule: guessing tokens is throttled per client address, and per nothing the sender chooses (a Host header it makes up
// is no new allowance), on every door that checks a token, not only on the page's sign-in form. An unknown bearer
// token on the API, /metrics, /admin/queues or a page counts against the same allowance the sign-in form and the inbox
// forms spend (one counter: 10 unknown tokens, then 10 a minute, guesses through any door counted together); past it a
// token is not checked and is answered 429 `rate_limited` with Retry-After in the API's error format, the right one
// too when it is used from that address for the first time, but a token that authenticated from that address before
// is checked and taken as ever: a guesser's tokens never did, so clients already working (behind the same proxy or
// NAT, or the operator's browser under a rebound page) keep working while someone guesses beside them. The same
// unknown token sent again is no new guess and spends nothing more. The OpenAPI document lists the 429 on every route
// that takes a token. A request saying it was forwarded while no proxy is trusted is warned about, once.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { bearer, rigSuite, tokenRegistry, TOKENS } from './rig.js';

/** A client address of its own for each test (the proxy in front, on loopback, names it), so none spends another's allowance. */
let addresses = 0;
const address = () => `203.0.113.${(addresses += 1)}`;
const guess = (i: number) => `itk_guess_${i}_${randomBytes(12).toString('hex')}`;

/** The token registry the app checks with, counting the tokens it is asked about. */
const registry = tokenRegistry();
const checked: string[] = [];
const counting = { ...registry, authenticate: (presented: string) => (checked.push(presented), registry.authenticate(presented)) };

describe('unknown bearer tokens, per client address', () => {
  const rig = rigSuite({ config: { trustProxy: 'loopback' }, metrics: true, deps: { tokens: counting } });
  const get = (path: string, token: string, from: string, host?: string) => {
    const sent = request(rig.app).get(path).set(bearer(token)).set('X-Forwarded-For', from);
    return host === undefined ? sent : sent.set('Host', host);
  };
  const signIn = (token: string, from: string, host?: string) => {
    const sent = request(rig.app).post('/ui/sign-in').type('form').set('sec-fetch-site', 'same-origin').set('X-Forwarded-For', from);
    return (host === undefined ? sent : sent.set('Host', host)).send({ token });
  };

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

  it('holds a guesser that names another Host on every request to the one allowance of its address', async () => {
    const from = address();
    const statuses: number[] = [];
    for (let i = 0; i < 12; i += 1) statuses.push((await get('/v1/effects', guess(i), from, `g${i}-${randomBytes(3).toString('hex')}.example`)).status);
    expect(statuses).toEqual([...Array<number>(10).fill(401), 429, 429]);
    // The page's doors too: a sign-in under yet another name is refused before its token is checked.
    expect((await signIn(guess(99), from, 'fresh-name.example')).status).toBe(429);
  });

  it('keeps taking a token that authenticated from the address before, on the API, /metrics, a page and the sign-in form, while that address is throttled', async () => {
    const from = address();
    const host = 'interlock.internal';
    expect((await get('/v1/effects', TOKENS.operator, from, host)).status).toBe(200);
    expect((await signIn(TOKENS.auditor, from, host)).status).toBe(303);
    // Someone else behind the same address, sending the same name, guesses ten times, then goes on.
    for (let i = 0; i < 10; i += 1) expect((await get('/v1/effects', guess(i), from, host)).status).toBe(401);
    expect((await get('/v1/effects', guess(10), from, host)).status).toBe(429);
    for (const path of ['/v1/effects', '/metrics', '/ui']) expect((await get(path, TOKENS.operator, from, host)).status, path).toBe(200);
    expect((await signIn(TOKENS.auditor, from, host)).status).toBe(303);
    // A known token does not make the address's other tokens known: guesses are still refused unchecked.
    expect((await get('/v1/effects', guess(11), from, host)).status).toBe(429);
  });

  it('answers 429 to a right token used from a throttled address for the first time, under any name, without checking it', async () => {
    const from = address();
    for (let i = 0; i < 10; i += 1) expect((await signIn(guess(i), from, 'rebound-7f.attacker.example')).status).toBe(401);
    checked.length = 0;
    const api = await get('/v1/effects', TOKENS.support, from, 'interlock.internal');
    expect(api.status).toBe(429);
    expect(api.body.error.code).toBe('rate_limited');
    expect((await signIn(TOKENS.auditor, from, 'interlock.internal')).status).toBe(429);
    expect(checked).toEqual([]);
    // From an address with room, the same token is checked and taken.
    expect((await get('/v1/effects', TOKENS.support, address(), 'interlock.internal')).status).toBe(200);
    expect(checked).toEqual([TOKENS.support]);
  });

  it('counts the page sign-in form and the API together, whatever Host each names', async () => {
    const from = address();
    for (let i = 0; i < 5; i += 1) expect((await signIn(guess(i), from, 'page.example')).status).toBe(401);
    for (let i = 5; i < 10; i += 1) expect((await get('/v1/effects', guess(i), from, 'api.example')).status).toBe(401);
    expect((await get('/v1/effects', TOKENS.auditor, from, 'api.example')).status).toBe(429);
    expect((await signIn(TOKENS.auditor, from, 'page.example')).status).toBe(429);
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
        if (!/does not know.*authenticated from the same address before/.test(operation.responses['429']?.description ?? '')) missing.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(routes).toBeGreaterThan(10);
    expect(missing).toEqual([]);
  });
});

describe('a request forwarded by a proxy nobody named', () => {
  const rig = rigSuite();
  const trusting = rigSuite({ config: { trustProxy: 'loopback' } });
  const warnings = (logs: Record<string, unknown>[]) => logs.filter((line) => typeof line.msg === 'string' && line.msg.includes('X-Forwarded-For but INTERLOCK_TRUST_PROXY is not set'));

  it('is warned about once a process, naming INTERLOCK_TRUST_PROXY and the shared limit; not when the proxy is trusted', async () => {
    expect((await request(rig.app).get('/v1/effects').set(bearer(TOKENS.auditor))).status).toBe(200);
    expect(warnings(rig.logs)).toEqual([]);
    for (const from of ['192.0.2.10', '192.0.2.11']) expect((await request(rig.app).get('/v1/effects').set(bearer(TOKENS.auditor)).set('X-Forwarded-For', from)).status).toBe(200);
    const warned = warnings(rig.logs);
    expect(warned).toHaveLength(1);
    expect(warned[0]?.level).toBe(40);
    expect(String(warned[0]?.msg)).toContain('shares one limit of unknown tokens');
    expect((await request(trusting.app).get('/v1/effects').set(bearer(TOKENS.auditor)).set('X-Forwarded-For', '192.0.2.12')).status).toBe(200);
    expect(warnings(trusting.logs)).toEqual([]);
  });
});
