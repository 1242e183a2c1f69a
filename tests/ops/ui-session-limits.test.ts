// Rule: signing in and out of the page costs a token holder what its other requests cost, and never grows the api's
// memory or work without bound. A sign-in is held to its caller's rate limit once its token is known, and sign-ins
// with a token this service does not know to a limit per client address, checked before the token is (guessing goes
// no faster than that); a sign-out is held to the rate limit of the session it ends. The process keeps the sessions
// open, at most 100 per token and 20,000 in all: a sign-in past either is refused with a sentence saying why and when
// to try again (never by forgetting a sign-out, whose copies would then open the page again), and a sign-out costs the
// same however many came before it.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createTokenRegistry } from '../../webhooks/app.js';
import { clientOf, createFailedSignIns } from '../../webhooks/ui/failed-sign-ins.js';
import { createPageSessions, SESSION_MS, SESSIONS_PER_CALLER, type PageSessions } from '../../webhooks/ui/session.js';
import { signIn } from '../http/page-sessions.js';
import { bearer, rigSuite, TOKENS, type Rig } from '../http/rig.js';

const postSignIn = (rig: Rig, token: string, address = '198.51.100.1') => request(rig.app).post('/ui/sign-in').type('form').set('sec-fetch-site', 'same-origin').set('x-forwarded-for', address).send({ token });
const sessionSet = (answer: request.Response) => ([] as string[]).concat(answer.headers['set-cookie'] ?? []).some((line) => /^interlock_session=v1\./.test(line));

describe('the rate limits of signing in and out', () => {
  // Three requests a caller, and the proxy in front (loopback) names the client's address.
  const rig = rigSuite({ config: { trustProxy: 'loopback' }, deps: { limits: { ratePerMinute: 3, rateBurst: 3 } } });

  it('holds sign-in to the rate limit of the token signing in: past it, 429 and no session', async () => {
    for (let i = 0; i < 3; i += 1) expect((await postSignIn(rig, TOKENS.support)).status).toBe(303);
    const refused = await postSignIn(rig, TOKENS.support);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.text).toContain('Token sam sent more requests than its rate limit allows');
    expect(sessionSet(refused)).toBe(false);
  });

  it('holds sign-out to the rate limit of the session it ends', async () => {
    const aud = await signIn(rig.app, TOKENS.auditor);
    for (let i = 0; i < 2; i += 1) expect((await request(rig.app).get('/v1/effects').set(bearer(TOKENS.auditor))).status).toBe(200);
    const refused = await request(rig.app).post('/ui/sign-out').type('form').set('sec-fetch-site', 'same-origin').set('cookie', aud.cookie).send({ csrf: aud.csrf });
    expect(refused.status).toBe(429);
    expect(refused.text).toContain('Token aud sent more requests than its rate limit allows');
  });

  it('refuses sign-ins from an address after 10 with an unknown token, before checking the token; other addresses go on', async () => {
    for (let i = 0; i < 10; i += 1) expect((await postSignIn(rig, `itk_guess_${i}_0123456789abcdef`, '203.0.113.7')).status).toBe(401);
    const guessed = await postSignIn(rig, TOKENS.operator, '203.0.113.7');
    expect(guessed.status).toBe(429);
    expect(Number(guessed.headers['retry-after'])).toBeGreaterThan(0);
    expect(guessed.text).toContain('Too many sign-ins from your address used a token this service does not know');
    expect(sessionSet(guessed)).toBe(false);
    expect((await postSignIn(rig, TOKENS.operator, '203.0.113.8')).status).toBe(303);
  });
});

describe('the sessions one token holds open', () => {
  const rig = rigSuite();

  it(`refuses a token's sign-in past ${SESSIONS_PER_CALLER} open sessions with 429 and a sentence; signing one out makes room`, async () => {
    const first = await signIn(rig.app, TOKENS.approver);
    for (let i = 1; i < SESSIONS_PER_CALLER; i += 1) expect((await postSignIn(rig, TOKENS.approver)).status).toBe(303);
    const refused = await postSignIn(rig, TOKENS.approver);
    expect(refused.status).toBe(429);
    expect(refused.text).toContain(`token alex already holds ${SESSIONS_PER_CALLER} open page sessions, the most one token may hold in this process. Sign out of one you no longer use, or try again in 720 min, when the oldest ends.`);
    expect(sessionSet(refused)).toBe(false);
    // Other tokens sign in as before.
    expect((await postSignIn(rig, TOKENS.auditor)).status).toBe(303);
    expect((await request(rig.app).post('/ui/sign-out').type('form').set('sec-fetch-site', 'same-origin').set('cookie', first.cookie).send({ csrf: first.csrf })).status).toBe(303);
    expect((await postSignIn(rig, TOKENS.approver)).status).toBe(303);
  });
});

describe('the sessions of one process, in memory', () => {
  const registry = createTokenRegistry([
    { name: 'ops', role: 'operator', token: TOKENS.operator },
    { name: 'aud', role: 'auditor', token: TOKENS.auditor },
    { name: 'sam', role: 'support', token: TOKENS.support },
  ]);
  const ops = { name: 'ops', role: 'operator' } as const;
  const aud = { name: 'aud', role: 'auditor' } as const;
  const sam = { name: 'sam', role: 'support' } as const;
  let clock = 1_700_000_000_000;
  const make = (limits: { perCaller: number; inProcess: number }) => createPageSessions({ tokens: registry, secret: randomBytes(32), now: () => clock, nonce: () => randomBytes(16).toString('base64url'), limits });
  /** The value of a session opened, or null when none was. */
  const valueOf = (sessions: PageSessions, caller: typeof ops | typeof aud | typeof sam) => {
    const opened = sessions.open(caller) as { opened?: boolean; value?: string };
    return opened.opened === false ? null : (opened.value ?? null);
  };

  it('holds at most its limits of sessions open, per token and in all, and makes room only as they are signed out or end', () => {
    const sessions = make({ perCaller: 3, inProcess: 5 });
    const start = clock;
    const mine = [valueOf(sessions, ops), valueOf(sessions, ops)];
    clock += 1_000;
    mine.push(valueOf(sessions, ops));
    expect(sessions.open(ops)).toEqual({ opened: false, full: 'caller', held: 3, until: start + SESSION_MS });
    expect([valueOf(sessions, aud), valueOf(sessions, aud)].every((value) => value !== null)).toBe(true);
    expect(sessions.open(sam)).toEqual({ opened: false, full: 'process', held: 5, until: start + SESSION_MS });
    // Refusing forgot nothing: every session opened is still good.
    for (const value of mine) expect(sessions.callerOf(value ?? '')).toEqual(ops);
    expect(sessions.close(mine[0] ?? '')).toBe(true);
    expect(valueOf(sessions, sam)).not.toBeNull();
    expect(sessions.open(ops)).toMatchObject({ opened: false, full: 'process' });
    // The two opened first end: their room is free again, the third's not yet.
    clock = start + SESSION_MS;
    expect(sessions.callerOf(mine[1] ?? '')).toBeNull();
    expect(valueOf(sessions, ops)).not.toBeNull();
    expect(sessions.callerOf(mine[2] ?? '')).toEqual(ops);
  });

  it('refuses a signed-out session until its end, however many sessions are opened and signed out after it', () => {
    const sessions = make({ perCaller: 2, inProcess: 4 });
    const out = valueOf(sessions, ops) ?? '';
    sessions.close(out);
    for (let i = 0; i < 5_000; i += 1) {
      clock += 1_000;
      sessions.close(valueOf(sessions, i % 2 === 0 ? ops : aud) ?? '');
      if (i % 500 === 0) expect(sessions.callerOf(out)).toBeNull();
    }
    expect(sessions.callerOf(out)).toBeNull();
  });
});

describe('sign-ins with an unknown token, per address', () => {
  let clock = 0;
  const limit = { perMinute: 6, burst: 3, addresses: 3, known: 2 };

  it('lets an address try again only as its bucket refills (one each 10 s here), and counts no other address', () => {
    const failures = createFailedSignIns(limit, () => clock);
    for (let i = 0; i < 3; i += 1) {
      expect(failures.waitSeconds('a')).toBe(0);
      failures.failed('a');
    }
    expect(failures.waitSeconds('a')).toBe(10);
    expect(failures.waitSeconds('b')).toBe(0);
    clock += 4_000;
    expect(failures.waitSeconds('a')).toBe(6);
    clock += 6_000;
    expect(failures.waitSeconds('a')).toBe(0);
  });

  it('counts an IPv6 client by its /64 (one subscriber holds it whole) and an IPv4-mapped address as its IPv4 one', () => {
    const failures = createFailedSignIns(limit, () => clock);
    for (let i = 0; i < 3; i += 1) failures.failed(`2001:db8:1:2::${i + 1}`);
    expect(failures.waitSeconds('2001:db8:1:2::28')).toBeGreaterThan(0);
    expect(failures.waitSeconds('2001:0db8:0001:0002:ffff::9')).toBeGreaterThan(0);
    expect(failures.waitSeconds('2001:db8:1:3::1')).toBe(0);
    for (let i = 0; i < 3; i += 1) failures.failed('::ffff:10.0.0.7');
    expect(failures.waitSeconds('10.0.0.7')).toBeGreaterThan(0);
    expect([clientOf('1:2:3:4:5:6:7:8'), clientOf('2001:db8::'), clientOf('fe80::1%eth0'), clientOf('192.0.2.1')]).toEqual(['1:2:3:4::/64', '2001:db8:0:0::/64', 'fe80:0:0:0::/64', '192.0.2.1']);
    clock += 60_000;
  });

  it(`keeps at most ${limit.addresses} addresses: past them, the one that failed longest ago is forgotten`, () => {
    const failures = createFailedSignIns(limit, () => clock);
    for (const address of ['a', 'b', 'c', 'd']) for (let i = 0; i < 3; i += 1) failures.failed(address);
    expect(['a', 'b', 'c', 'd'].map((address) => failures.waitSeconds(address) > 0)).toEqual([false, true, true, true]);
  });
});
