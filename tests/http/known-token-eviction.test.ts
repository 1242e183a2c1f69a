// Rule: a token that authenticated from an address is checked from there while that address is throttled (a guesser
// sharing it cannot hold working clients out), and no other caller can make the counter forget it: one token is known
// at its last 32 addresses at most, so one holder of any token (the lowest role) authenticating from each of 10,000
// IPv6 /64s (a free /48) pushes no other address's known token out. And only a request its caller's rate limit let
// through makes a token known at its address: a request refused by that limit (API, a page's bearer header, the
// sign-in form) is no use of the token and refreshes nothing.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createFailedSignIns, FAILED_SIGN_INS } from '../../webhooks/ui/failed-sign-ins.js';
import { bearer, rigSuite, TOKENS } from './rig.js';

describe('known tokens of an address, in memory', () => {
  it('survive one other token authenticating from 10,000 /64s, which stays known at its last 32 of them only', () => {
    let t = 1_000_000;
    const counter = createFailedSignIns(FAILED_SIGN_INS, () => t);
    const office = '203.0.113.7';
    const operatorToken = 'op_'.padEnd(40, 'x');
    counter.succeeded(office, operatorToken);
    // A guesser at the same address empties its bucket.
    for (let i = 0; i < 20; i += 1) counter.failed(office, `guess-${i}`.padEnd(40, 'g'));
    expect(counter.waitSeconds(office, 'another-guess'.padEnd(40, 'g'))).toBeGreaterThan(0);
    expect(counter.waitSeconds(office, operatorToken)).toBe(0);
    // Someone holding one valid low-role token authenticates once from each of 10,000 /64s of a /48.
    const lowRoleToken = 'agent_'.padEnd(40, 'y');
    const net = (i: number) => `2001:db8:1:${i.toString(16)}::1`;
    for (let i = 0; i < FAILED_SIGN_INS.addresses; i += 1) counter.succeeded(net(i), lowRoleToken);
    t += 1;
    expect(counter.waitSeconds(office, operatorToken)).toBe(0);
    expect(counter.waitSeconds(office, 'another-guess'.padEnd(40, 'g'))).toBeGreaterThan(0);
    // Where the low-role token is known: the last 32 /64s, not the first.
    for (const i of [0, FAILED_SIGN_INS.addresses - 33, FAILED_SIGN_INS.addresses - 32, FAILED_SIGN_INS.addresses - 1]) for (let g = 0; g < 10; g += 1) counter.failed(net(i), `g${g}`.padEnd(40, 'g'));
    expect([0, FAILED_SIGN_INS.addresses - 33, FAILED_SIGN_INS.addresses - 32, FAILED_SIGN_INS.addresses - 1].map((i) => counter.waitSeconds(net(i), lowRoleToken) > 0)).toEqual([true, true, false, false]);
  });

  it('past the cap of addresses, still forget the address whose token authenticated longest ago, with its other tokens', () => {
    const counter = createFailedSignIns({ perMinute: 6, burst: 1, addresses: 3, known: 2, perToken: 2 }, () => 0);
    counter.succeeded('a', 'one');
    counter.succeeded('b', 'two');
    counter.succeeded('c', 'three');
    counter.succeeded('a', 'four');
    counter.succeeded('d', 'two');
    for (const address of ['a', 'b', 'c', 'd']) counter.failed(address, 'guess');
    // b went for d (the cap); `one` and `four` still known at a; `two` at d.
    expect([counter.waitSeconds('a', 'one'), counter.waitSeconds('a', 'four'), counter.waitSeconds('b', 'two'), counter.waitSeconds('c', 'three'), counter.waitSeconds('d', 'two')].map((wait) => wait > 0)).toEqual([false, false, true, false, false]);
  });
});

describe('a request its caller’s rate limit refused', () => {
  // Three requests for each caller, then one a minute: no test here runs long enough to earn another.
  const rig = rigSuite({ config: { trustProxy: 'loopback' }, deps: { limits: { ratePerMinute: 1, rateBurst: 3 } } });
  const from = (req: request.Test, address: string) => req.set('X-Forwarded-For', address);
  const guessAll = async (address: string) => {
    for (let i = 0; i < 10; i += 1) expect((await from(request(rig.app).get('/v1/effects').set(bearer(`itk_guess_${i}_${address}_0123456789`)), address)).status).toBe(401);
  };

  it('on the API makes its token no known one at that address', async () => {
    const elsewhere = '198.51.100.21';
    for (let i = 0; i < 3; i += 1) expect((await from(request(rig.app).get('/v1/effects').set(bearer(TOKENS.support)), elsewhere)).status).toBe(200);
    const office = '198.51.100.22';
    const limited = await from(request(rig.app).get('/v1/effects').set(bearer(TOKENS.support)), office);
    expect(limited.status).toBe(429);
    expect(limited.body.error.message).toMatch(/sent more requests than its rate limit allows/);
    await guessAll(office);
    // Not known there: refused unchecked as any token first used from a throttled address.
    const refused = await from(request(rig.app).get('/v1/effects').set(bearer(TOKENS.support)), office);
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(/Too many tokens this service does not know/);
  });

  it('with a bearer header on a page makes its token no known one at that address', async () => {
    const elsewhere = '198.51.100.31';
    for (let i = 0; i < 3; i += 1) expect((await from(request(rig.app).get('/v1/effects').set(bearer(TOKENS.auditor)), elsewhere)).status).toBe(200);
    const office = '198.51.100.32';
    const limited = await from(request(rig.app).get('/ui').set(bearer(TOKENS.auditor)), office);
    expect(limited.status).toBe(429);
    expect(limited.text).toMatch(/sent more requests than its rate limit allows/);
    await guessAll(office);
    const refused = await from(request(rig.app).get('/ui').set(bearer(TOKENS.auditor)), office);
    expect(refused.status).toBe(429);
    expect(refused.text).toMatch(/Too many tokens this service does not know came from your address/);
  });

  it('on the sign-in form makes its token no known one at that address', async () => {
    const elsewhere = '198.51.100.41';
    for (let i = 0; i < 3; i += 1) expect((await from(request(rig.app).get('/v1/effects').set(bearer(TOKENS.operator)), elsewhere)).status).toBe(200);
    const office = '198.51.100.42';
    const signIn = () => from(request(rig.app).post('/ui/sign-in').type('form').set('sec-fetch-site', 'same-origin'), office).send({ token: TOKENS.operator });
    const limited = await signIn();
    expect(limited.status).toBe(429);
    expect(limited.text).toMatch(/Not signed in: Token ops sent more requests than its rate limit allows/);
    await guessAll(office);
    const refused = await signIn();
    expect(refused.status).toBe(429);
    expect(refused.text).toMatch(/Too many sign-ins from your address used a token this service does not know/);
  });

  it('while one its limit let through still makes it known there', async () => {
    const office = '198.51.100.52';
    expect((await from(request(rig.app).get('/v1/effects').set(bearer(TOKENS.approver)), office)).status).toBe(403);
    await guessAll(office);
    // Checked (known), then refused as an approver may not read effects: not 429.
    expect((await from(request(rig.app).get('/v1/effects').set(bearer(TOKENS.approver)), office)).status).toBe(403);
  });
});
