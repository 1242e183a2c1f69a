// Rule: the page's sign-in cookie holds a session, never the API token. The browser sends the cookie to every port of
// the host (RFC 6265 §8.5), so whatever else listens there gets it: it must not work as a bearer token or on the JSON
// API, and it must end on the server: 12 h after sign-in, at sign-out (a copy taken before is refused after), and
// when its token is removed from the configuration. A session altered in any part is refused, and the CSRF token of
// its forms derives from the session, not from the API token. A cookie that holds a token is no session.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createTokenRegistry, type TokenRegistry } from '../../webhooks/app.js';
import { createPageSessions, csrfTokenFor, SESSION_MS, type PageSessions } from '../../webhooks/ui/session.js';
import { signIn } from '../http/page-sessions.js';
import { bearer, rigSuite, tokenRegistry, TOKENS } from '../http/rig.js';

const asCookie = (value: string) => `interlock_session=${encodeURIComponent(value)}`;

describe('the page session', () => {
  /** The auditor's token, taken out of the configuration by a test (as a registry reloaded without it would be). */
  let removed = false;
  const all = tokenRegistry();
  const tokens: TokenRegistry = {
    authenticate: (presented) => (removed && presented === TOKENS.auditor ? null : all.authenticate(presented)),
    callers: () => all.callers().filter((caller) => !(removed && caller.name === 'aud')),
  };
  const rig = rigSuite({ metrics: true, deps: { tokens } });

  it('sets a cookie that holds no token and ends when the server says (12 h), not only when the browser forgets it', async () => {
    const answer = await request(rig.app).post('/ui/sign-in').type('form').set('sec-fetch-site', 'same-origin').send({ token: TOKENS.operator });
    expect(answer.status).toBe(303);
    const set = String(answer.headers['set-cookie']);
    expect(set).toMatch(/^interlock_session=v1\.operator\.ops\.\d+\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43};/);
    expect(set).toMatch(/Max-Age=43200/);
    for (const token of Object.values(TOKENS)) {
      expect(set).not.toContain(token);
      expect(set).not.toContain(encodeURIComponent(token));
    }
  });

  it('opens the page, the dashboard and the metrics, and nothing on the JSON API: not as a cookie, not as a bearer token', async () => {
    const ops = await signIn(rig.app, TOKENS.operator);
    expect((await request(rig.app).get('/ui').set('cookie', ops.cookie)).status).toBe(200);
    expect((await request(rig.app).get('/metrics').set('cookie', ops.cookie)).status).toBe(200);
    expect((await request(rig.app).get('/admin/queues').set('cookie', ops.cookie)).status).toBe(200);
    const support = await signIn(rig.app, TOKENS.support);
    expect((await request(rig.app).get('/metrics').set('cookie', support.cookie)).status).toBe(403);
    const asCookieOnApi = await request(rig.app).get('/v1/effects').set('cookie', ops.cookie);
    expect(asCookieOnApi.status).toBe(401);
    const asBearer = await request(rig.app).get('/v1/effects').set(bearer(ops.value));
    expect(asBearer.status).toBe(401);
    expect(asBearer.body.error.message).toContain('not one this service knows');
  });

  it('takes no token in the cookie: a cookie holding one is signed out on the page and refused on the metrics and the dashboard', async () => {
    const page = await request(rig.app).get('/ui').set('cookie', asCookie(TOKENS.operator));
    expect({ status: page.status, location: page.headers.location }).toEqual({ status: 303, location: '/ui/sign-in?next=%2Fui' });
    const metrics = await request(rig.app).get('/metrics').set('cookie', asCookie(TOKENS.operator));
    expect(metrics.status).toBe(401);
    expect(metrics.body.error.message).toContain('sign in again at /ui');
    expect((await request(rig.app).get('/admin/queues').set('cookie', asCookie(TOKENS.operator))).status).toBe(401);
  });

  it('signing out ends the session on the server: a copy of the cookie taken before (another server on the host got one) is refused after', async () => {
    const ops = await signIn(rig.app, TOKENS.operator);
    const copy = ops.cookie;
    expect((await request(rig.app).get('/ui').set('cookie', copy)).status).toBe(200);
    const out = await request(rig.app).post('/ui/sign-out').type('form').set('sec-fetch-site', 'same-origin').set('cookie', ops.cookie).send({ csrf: ops.csrf });
    expect(out.status).toBe(303);
    expect(String(out.headers['set-cookie'])).toMatch(/interlock_session=;/);
    const page = await request(rig.app).get('/ui').set('cookie', copy);
    expect({ status: page.status, location: page.headers.location }).toEqual({ status: 303, location: '/ui/sign-in?next=%2Fui' });
    expect((await request(rig.app).get('/metrics').set('cookie', copy)).status).toBe(401);
    // Another session of the same token is its own: it goes on.
    const again = await signIn(rig.app, TOKENS.operator);
    expect((await request(rig.app).get('/ui').set('cookie', again.cookie)).status).toBe(200);
  });

  it('refuses a session altered in any part: its role, name, end, nonce or MAC', async () => {
    const aud = await signIn(rig.app, TOKENS.auditor);
    expect((await request(rig.app).get('/ui').set('cookie', aud.cookie)).status).toBe(200);
    const [version, role, name, expires, nonce, mac] = aud.value.split('.') as [string, string, string, string, string, string];
    expect([version, role, name]).toEqual(['v1', 'auditor', 'aud']);
    const flip = (text: string) => `${text.slice(0, -1)}${text.endsWith('A') ? 'B' : 'A'}`;
    const altered = [
      [version, 'operator', 'ops', expires, nonce, mac],
      [version, role, 'ops', expires, nonce, mac],
      [version, role, name, String(Number(expires) + SESSION_MS), nonce, mac],
      [version, role, name, expires, flip(nonce), mac],
      [version, role, name, expires, nonce, flip(mac)],
      [version, role, name, expires, nonce],
    ];
    for (const parts of altered) {
      const page = await request(rig.app).get('/ui').set('cookie', asCookie(parts.join('.')));
      expect(page.status, parts.join('.')).toBe(303);
    }
  });

  it('derives the CSRF token of its forms from the session, not the API token', async () => {
    const one = await signIn(rig.app, TOKENS.auditor);
    const two = await signIn(rig.app, TOKENS.auditor);
    const page = await request(rig.app).get('/ui').set('cookie', one.cookie);
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)?.[1];
    expect(csrf).toBe(csrfTokenFor(one.value));
    expect(csrf).not.toBe(csrfTokenFor(TOKENS.auditor));
    expect(csrf).not.toBe(two.csrf);
    // The API token's HMAC (what the form carried before) does not sign this session out.
    const refused = await request(rig.app).post('/ui/sign-out').type('form').set('sec-fetch-site', 'same-origin').set('cookie', one.cookie).send({ csrf: csrfTokenFor(TOKENS.auditor) });
    expect(refused.status).toBe(403);
  });

  it('ends the sessions of a token removed from the configuration', async () => {
    const aud = await signIn(rig.app, TOKENS.auditor);
    expect((await request(rig.app).get('/ui').set('cookie', aud.cookie)).status).toBe(200);
    removed = true;
    try {
      expect((await request(rig.app).get('/ui').set('cookie', aud.cookie)).status).toBe(303);
      expect((await request(rig.app).get('/metrics').set('cookie', aud.cookie)).status).toBe(401);
    } finally {
      removed = false;
    }
  });
});

describe('the sessions of one process', () => {
  const registry = createTokenRegistry([{ name: 'ops.team@example', role: 'operator', token: TOKENS.operator }]);
  const ops = { name: 'ops.team@example', role: 'operator' } as const;
  let clock = 1_700_000_000_000;
  let count = 0;
  const make = (secret: Buffer) => createPageSessions({ tokens: registry, secret, now: () => clock, nonce: () => `n${String(count++).padStart(21, '0')}` });
  const opened = (sessions: PageSessions) => {
    const session = sessions.open(ops);
    if (!session.opened) throw new Error(`no session opened: ${session.full} full`);
    return session;
  };

  it('holds a session to its 12 hours on the server, whatever the browser keeps', () => {
    const sessions = make(Buffer.alloc(32, 1));
    const { value, expiresAt } = opened(sessions);
    expect(expiresAt).toBe(clock + 12 * 3_600_000);
    // A name with dots and an @ reads back whole.
    expect(sessions.callerOf(value)).toEqual(ops);
    clock = expiresAt - 1;
    expect(sessions.callerOf(value)).toEqual(ops);
    clock = expiresAt;
    expect(sessions.callerOf(value)).toBeNull();
  });

  it('takes only sessions made with its own secret, and a sign-out ends only the session signed out', () => {
    const sessions = make(Buffer.alloc(32, 2));
    const other = make(Buffer.alloc(32, 3));
    const mine = opened(sessions).value;
    const second = opened(sessions).value;
    expect(other.callerOf(mine)).toBeNull();
    sessions.close(mine);
    expect(sessions.callerOf(mine)).toBeNull();
    expect(sessions.callerOf(second)).toEqual(ops);
    expect(sessions.callerOf(TOKENS.operator)).toBeNull();
  });
});
