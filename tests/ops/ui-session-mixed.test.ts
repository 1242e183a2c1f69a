// Rule: a request that carries the open page sessions of two callers is neither of them. Another server on the host can
// sign in with a token of its own and plant its session for a longer path (cookies are shared between the ports of a
// host, RFC 6265 §8.5; longer paths are sent first, §5.4): taking the first would have the person act, unknowing,
// under that other name. The page answers 409 naming both, with a sign-out form that ends both; forms do nothing; the
// metrics and the dashboard answer 401 naming both. Signing in ends the sessions the browser held, so the new one is
// the only one open and the planted copy is refused from then on. Two sessions of one caller are that caller.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { signIn } from '../http/page-sessions.js';
import { rigSuite, TOKENS } from '../http/rig.js';

const sameOrigin = { 'sec-fetch-site': 'same-origin' };

describe('the open sessions of two callers in one request', () => {
  const rig = rigSuite({ metrics: true });

  /** Whether the page takes the session (an approver's is refused the effects list, 403, but signed in). */
  const isOpen = async (cookie: string) => (await request(rig.app).get('/ui').set('cookie', cookie)).status !== 303;

  it('are neither: the page answers 409 naming both and offers to sign out of both, and acts as neither', async () => {
    const ops = await signIn(rig.app, TOKENS.operator);
    const planted = await signIn(rig.app, TOKENS.approver);
    const both = `${planted.cookie}; ${ops.cookie}`;
    const page = await request(rig.app).get('/ui').set('cookie', both);
    expect(page.status).toBe(409);
    expect(page.text).toContain('ops (operator)');
    expect(page.text).toContain('alex (approver)');
    expect(page.text).not.toContain('Signed in as');
    expect(page.text).toContain('action="/ui/sign-out"');
    // A form is not acted on: refused before its handler (which would answer 403 for a wrong CSRF token, or 404).
    const form = await request(rig.app).post('/ui/inbox/inb_missing/dismiss').type('form').set(sameOrigin).set('cookie', both).send({ csrf: planted.csrf, note: 'x' });
    expect(form.status).toBe(409);
    for (const path of ['/metrics', '/admin/queues']) {
      const answer = await request(rig.app).get(path).set('cookie', both);
      expect(answer.status, path).toBe(401);
      expect(answer.body.error.message, path).toContain('several tokens (alex (approver), ops (operator))');
    }
    // Each alone is still its caller's.
    expect(await isOpen(ops.cookie)).toBe(true);
    expect(await isOpen(planted.cookie)).toBe(true);
  });

  it('are ended, both, by the sign-out form of that page', async () => {
    const ops = await signIn(rig.app, TOKENS.operator);
    const planted = await signIn(rig.app, TOKENS.approver);
    const both = `${planted.cookie}; ${ops.cookie}`;
    const page = await request(rig.app).get('/ui').set('cookie', both);
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)?.[1] ?? '';
    const out = await request(rig.app).post('/ui/sign-out').type('form').set(sameOrigin).set('cookie', both).send({ csrf });
    expect(out.status).toBe(303);
    expect(await isOpen(ops.cookie)).toBe(false);
    expect(await isOpen(planted.cookie)).toBe(false);
  });

  it('planted for one page’s path only, are ended by the sign-out form of that page, posted under its path', async () => {
    const ops = await signIn(rig.app, TOKENS.operator);
    const planted = await signIn(rig.app, TOKENS.approver);
    // Set for Path=/ui/inbox: the browser sends it to /ui/inbox and below, never to /ui/sign-out.
    const both = `${planted.cookie}; ${ops.cookie}`;
    const page = await request(rig.app).get('/ui/inbox').set('cookie', both);
    expect(page.status).toBe(409);
    expect(page.text).toContain('action="/ui/inbox/sign-out"');
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)?.[1] ?? '';
    const out = await request(rig.app).post('/ui/inbox/sign-out').type('form').set(sameOrigin).set('cookie', both).send({ csrf });
    expect(out.status).toBe(303);
    const cleared = ([] as string[]).concat(out.headers['set-cookie'] ?? []).map((line) => /Path=([^;]+)/.exec(line)?.[1]).sort();
    expect(cleared).toEqual(['/', '/ui/inbox', '/ui/sign-out']);
    expect(await isOpen(ops.cookie)).toBe(false);
    expect(await isOpen(planted.cookie)).toBe(false);
  });

  it('end when the person signs in: the new session is the only one the browser holds open, and the planted copy is refused', async () => {
    const planted = await signIn(rig.app, TOKENS.approver);
    const before = await signIn(rig.app, TOKENS.operator);
    const signedIn = await request(rig.app).post('/ui/sign-in').type('form').set(sameOrigin).set('cookie', `${planted.cookie}; ${before.cookie}`).send({ token: TOKENS.operator });
    expect(signedIn.status).toBe(303);
    const fresh = /^interlock_session=([^;]+)/.exec(([] as string[]).concat(signedIn.headers['set-cookie'] ?? [])[0] ?? '')?.[1];
    expect(fresh).toBeDefined();
    // The browser now sends the planted cookie (longer path) and the new one.
    const page = await request(rig.app).get('/ui').set('cookie', `${planted.cookie}; interlock_session=${fresh}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Signed in as <strong>ops</strong>');
    expect(await isOpen(planted.cookie)).toBe(false);
    expect(await isOpen(before.cookie)).toBe(false);
  });

  it('of one caller are that caller: two sessions of the same token open the page', async () => {
    const first = await signIn(rig.app, TOKENS.operator);
    const second = await signIn(rig.app, TOKENS.operator);
    const page = await request(rig.app).get('/ui').set('cookie', `${first.cookie}; ${second.cookie}`);
    expect(page.status).toBe(200);
    expect((await request(rig.app).get('/metrics').set('cookie', `${first.cookie}; ${second.cookie}`)).status).toBe(200);
  });
});
