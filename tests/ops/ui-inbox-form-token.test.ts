// Rule: the page's sign-in cookie alone never records anything. The browser sends it to every server on the host, and
// whoever holds a copy can fetch the page and read the forms' CSRF token, so each inbox form (re-approve, resolve,
// dismiss) also takes the person's own API token, typed into a password field: a configured token of the session's
// own name and role, checked on the server, and the action is recorded as that caller. A missing token, an unknown one
// or another caller's (another name, or the same name's other role) answers the item again, 403, with nothing recorded
// and the note kept in the form, never the token; a wrong token counts toward the failed sign-ins of its address,
// whatever Host it names (past ten, no token is checked but one that authenticated from that address before, and the
// sign-in form and bearer headers from there are refused too).
// No token typed into a form reaches the log or the page. Another Authorization header than Bearer does not stand in
// for the token.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createItemMaker, inboxSuite, type ItemMaker } from '../http/inbox-items.js';
import { signIn } from '../http/page-sessions.js';
import { bearer, rigSuite, TOKENS } from '../http/rig.js';

const { rig, make } = inboxSuite();

const LABEL = 'Your token (to sign this action)';

/** A same-origin form post as a browser sends it. */
function post(path: string, cookie: string, fields: Record<string, string>) {
  return request(rig.app).post(path).type('form').set('Cookie', cookie).set('sec-fetch-site', 'same-origin').send(fields);
}

const closureOf = async (item: string) => (await rig.stores.inbox.get(item))?.closure ?? null;

describe('the inbox forms on the page', () => {
  it('each have a password field for the person’s own token, empty, and labelled', async () => {
    const alex = await signIn(rig.app, TOKENS.approver);
    const { item } = await make.stale();
    const { item: ambiguous } = await make.ambiguous();
    const stale = (await request(rig.app).get(`/ui/inbox/${item}`).set('Cookie', alex.cookie)).text;
    const unsure = (await request(rig.app).get(`/ui/inbox/${ambiguous}`).set('Cookie', alex.cookie)).text;
    for (const action of ['reapprove', 'dismiss']) {
      expect(stale).toContain(`<label for="${action}-token">${LABEL}</label><input type="password" id="${action}-token" name="token" autocomplete="current-password" required maxlength="256">`);
    }
    expect(unsure).toContain(`<label for="resolve-token">${LABEL}</label><input type="password" id="resolve-token" name="token" autocomplete="current-password" required maxlength="256">`);
  });

  it('record nothing without the token, however right the cookie and CSRF token are, and keep the note typed', async () => {
    const alex = await signIn(rig.app, TOKENS.approver);
    const { item, pi } = await make.stale();
    const note = 'Customer called <twice>';
    const dismissed = await post(`/ui/inbox/${item}/dismiss`, alex.cookie, { csrf: alex.csrf, note });
    expect(dismissed.status).toBe(403);
    expect(dismissed.text).toContain('This action needs your own API token');
    expect(dismissed.text).toContain('Nothing was recorded.');
    expect(dismissed.text).toContain('<textarea id="dismiss-note" name="note" required maxlength="2000">Customer called &lt;twice&gt;</textarea>');
    const approval = await make.grant(pi);
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    const reapproved = await post(`/ui/inbox/${item}/reapprove`, alex.cookie, { csrf: alex.csrf, approval, note: 'sent again' });
    expect(reapproved.status).toBe(403);
    // Another Authorization header leaves the caller to the cookie: it does not stand in for the token.
    const basic = await request(rig.app).post(`/ui/inbox/${item}/dismiss`).type('form').set('Cookie', alex.cookie).set('sec-fetch-site', 'same-origin').set('Authorization', 'Basic YWxleDp4').send({ csrf: alex.csrf, note });
    expect(basic.status).toBe(403);
    expect(await closureOf(item)).toBeNull();
  });

  it('record nothing under another caller’s token or an unknown one, and record the action as the session’s caller under its own', async () => {
    const alex = await signIn(rig.app, TOKENS.approver);
    const dana = await signIn(rig.app, TOKENS.danaApprover);
    const { item } = await make.stale();
    const unknown = `itk_guess_${randomBytes(8).toString('hex')}`;
    const wrong = [
      [alex, TOKENS.danaApprover],
      [dana, TOKENS.danaSupport],
      [alex, TOKENS.auditor],
      [alex, unknown],
      [alex, ` ${TOKENS.approver}x`],
    ] as const;
    for (const [who, token] of wrong) {
      const sent = await post(`/ui/inbox/${item}/dismiss`, who.cookie, { csrf: who.csrf, note: 'handled by phone', token });
      expect(sent.status, token).toBe(403);
      expect(sent.text).toContain('That is not your token');
      expect(sent.text).toContain('handled by phone</textarea>');
      expect(sent.text).not.toContain(token.trim());
    }
    expect(await closureOf(item)).toBeNull();
    const done = await post(`/ui/inbox/${item}/dismiss`, alex.cookie, { csrf: alex.csrf, note: 'handled by phone', token: TOKENS.approver });
    expect(done.status, done.text).toBe(303);
    expect(await closureOf(item)).toMatchObject({ action: 'dismiss', by: { name: 'alex', role: 'approver' }, note: 'handled by phone' });
    // Neither the right token nor the wrong ones reach the log.
    for (const [, token] of wrong) expect(rig.logText()).not.toContain(token.trim());
    expect(rig.logText()).not.toContain(TOKENS.approver);
    expect(rig.logs.some((line) => line.msg === 'page form with a token not its session’s' && line.token === 'alex')).toBe(true);
  });
});

describe('a wrong token typed into the inbox forms', () => {
  // A rig of its own, with a proxy on loopback naming each client's address.
  const own = rigSuite({ config: { trustProxy: 'loopback' } });
  let maker: ItemMaker | undefined;
  beforeAll(async () => {
    maker = await createItemMaker(own);
  });
  afterAll(async () => {
    await maker?.close();
  });
  const stale = async () => (await maker?.stale())?.item ?? '';
  /** A same-origin form post from the client at `from` (none: the proxy's own address), under the Host `host`. */
  const postFrom = (path: string, cookie: string, fields: Record<string, string>, host: string, from?: string) => {
    const sent = request(own.app).post(path).type('form').set('Cookie', cookie).set('sec-fetch-site', 'same-origin').set('Host', host);
    return (from === undefined ? sent : sent.set('X-Forwarded-For', from)).send(fields);
  };

  it('counts as a failed sign-in of its address whatever Host it names: past the allowance a token first used there is not checked, through the forms, the sign-in form or a bearer header', async () => {
    const alex = await signIn(own.app, TOKENS.approver);
    const item = await stale();
    // A copy of alex's cookie, used from another address, under another name each time.
    const from = '203.0.113.50';
    const statuses: number[] = [];
    for (let i = 0; i < 10; i += 1) statuses.push((await postFrom(`/ui/inbox/${item}/dismiss`, alex.cookie, { csrf: alex.csrf, note: 'x', token: `itk_guess_${i}_0123456789abcdef` }, `g${i}.test`, from)).status);
    expect(statuses).toEqual(Array<number>(10).fill(403));
    const right = await postFrom(`/ui/inbox/${item}/dismiss`, alex.cookie, { csrf: alex.csrf, note: 'x', token: TOKENS.approver }, 'fresh.test', from);
    expect(right.status).toBe(429);
    expect(Number(right.headers['retry-after'])).toBeGreaterThan(0);
    expect(right.text).toContain('Nothing was recorded.');
    const signingIn = await request(own.app).post('/ui/sign-in').type('form').set('Host', 'other.test').set('X-Forwarded-For', from).set('sec-fetch-site', 'same-origin').send({ token: TOKENS.approver });
    expect(signingIn.status).toBe(429);
    expect((await request(own.app).get('/v1/effects').set(bearer(TOKENS.auditor)).set('X-Forwarded-For', from)).status).toBe(429);
    expect((await own.stores.inbox.get(item))?.closure ?? null).toBeNull();
  });

  it('still takes the token of the person who signed in from the address, while guesses there are refused', async () => {
    // Signed in from the proxy's own address; the forms' guesses come from the same address.
    const alex = await signIn(own.app, TOKENS.approver);
    const item = await stale();
    for (let i = 0; i < 10; i += 1) expect((await postFrom(`/ui/inbox/${item}/dismiss`, alex.cookie, { csrf: alex.csrf, note: 'x', token: `itk_guess_${i}_fedcba9876543210` }, 'interlock.test')).status).toBe(403);
    expect((await postFrom(`/ui/inbox/${item}/dismiss`, alex.cookie, { csrf: alex.csrf, note: 'x', token: 'itk_guess_10_fedcba9876543210' }, 'interlock.test')).status).toBe(429);
    const done = await postFrom(`/ui/inbox/${item}/dismiss`, alex.cookie, { csrf: alex.csrf, note: 'x', token: TOKENS.approver }, 'interlock.test');
    expect(done.status, done.text.slice(0, 300)).toBe(303);
    expect((await own.stores.inbox.get(item))?.closure).toMatchObject({ action: 'dismiss', by: { name: 'alex', role: 'approver' } });
  });
});
