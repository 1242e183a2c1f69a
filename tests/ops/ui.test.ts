// The page under /ui and the queue dashboard over HTTP (issue 13 §2-3), without a browser: signing in sets an
// HttpOnly SameSite=Strict cookie and only from this origin, signing out needs the session's CSRF token, everything
// from the journal is escaped, roles see what the API would show them, and the dashboard is the operator's and
// read-only. The browser test (ui-browser.test.ts) clicks through the same pages.
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { verify, publicKeySet, publicKeyPem } from '../../src/interlock.js';
import { csrfTokenFor } from '../../webhooks/ui/routes.js';
import { escapeHtml, html, toText } from '../../webhooks/ui/html.js';
import { stripeUrl } from '../../webhooks/ui/pages.js';
import { createApp } from '../../webhooks/app.js';
import { DEFAULT_PREMISES } from '../../webhooks/api/context.js';
import { pageSession, signIn } from '../http/page-sessions.js';
import { approvalBody, bearer, refundBody, rigSuite, tokenRegistry, TOKENS } from '../http/rig.js';

const HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>';
// Free text may hold a direction override: drawn as it is, it would turn the rest of its line around on the page.
const TURNED = 'Refund 20.00 for incident \u202e00.0002 inc_real';

describe('the page', () => {
  // The refunds' premises name their currency, as the Stripe target's do (REFUND_FACTS).
  const rig = rigSuite({ worker: true, metrics: true, deps: { premises: { ...DEFAULT_PREMISES, refund: [...DEFAULT_PREMISES.refund, 'currency'] } } });
  const cookie = async (token: string) => (await pageSession(rig.app, token)).cookie;
  let committed: string;
  let refused: string;

  beforeAll(async () => {
    rig.target.world.set('payment:pi_ui1', { chargebacks: [], refunded_by_others: 0 });
    const approval = approvalBody({ scope: 'payment:pi_ui1', cap_cents: 3_000 });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const one = await request(rig.app).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: 'pi_ui1', approval: approval.id, decision: { model: 'support-model', text: HOSTILE }, amount: 2_000 }));
    expect(one.body.outcome).toBe('COMMITTED');
    committed = one.body.effect_id;
    const two = await request(rig.app).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: 'pi_ui1', approval: approval.id, amount: 2_000, decision: { model: 'support-model', text: TURNED } }));
    expect(two.body.outcome).toBe('REFUSED:over_cap');
    refused = two.body.effect_id;
  }, 60_000);

  it('sends a signed-out browser to the sign-in form, and back where it was after signing in', async () => {
    const page = await request(rig.app).get(`/ui/effects/${committed}`);
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe(`/ui/sign-in?next=${encodeURIComponent(`/ui/effects/${committed}`)}`);
    const form = await request(rig.app).get(page.headers.location as string);
    expect(form.status).toBe(200);
    expect(form.text).toContain('<label for="token">API token</label>');
    const signed = await request(rig.app).post('/ui/sign-in').type('form').set('sec-fetch-site', 'same-origin').send({ token: TOKENS.auditor, next: `/ui/effects/${committed}` });
    expect(signed.status).toBe(303);
    expect(signed.headers.location).toBe(`/ui/effects/${committed}`);
    const set = String(signed.headers['set-cookie']);
    expect(set).toMatch(/^interlock_session=/);
    expect(set).toMatch(/HttpOnly/);
    expect(set).toMatch(/SameSite=Strict/);
  });

  it('refuses a sign-in posted from another site, an unknown token, and a redirect to another site', async () => {
    const crossSite = await request(rig.app).post('/ui/sign-in').type('form').set('sec-fetch-site', 'cross-site').send({ token: TOKENS.auditor });
    expect(crossSite.status).toBe(403);
    expect(crossSite.headers['set-cookie']).toBeUndefined();
    const otherOrigin = await request(rig.app).post('/ui/sign-in').type('form').set('origin', 'https://evil.example').send({ token: TOKENS.auditor });
    expect(otherOrigin.status).toBe(403);
    const unknown = await request(rig.app).post('/ui/sign-in').type('form').send({ token: 'not-a-token-anyone-knows' });
    expect(unknown.status).toBe(401);
    expect(unknown.text).toContain('role="alert"');
    const away = await request(rig.app).post('/ui/sign-in').type('form').send({ token: TOKENS.auditor, next: '//evil.example/ui' });
    expect(away.headers.location).toBe('/ui');
  });

  it('signs out only with the session’s CSRF token', async () => {
    // A session of its own: signing out ends it, and the other tests go on with theirs.
    const aud = await signIn(rig.app, TOKENS.auditor);
    const without = await request(rig.app).post('/ui/sign-out').type('form').set('cookie', aud.cookie).send({});
    expect(without.status).toBe(403);
    const wrong = await request(rig.app).post('/ui/sign-out').type('form').set('cookie', aud.cookie).send({ csrf: (await pageSession(rig.app, TOKENS.operator)).csrf });
    expect(wrong.status).toBe(403);
    // The CSRF token derives from the session, not the API token.
    const fromToken = await request(rig.app).post('/ui/sign-out').type('form').set('cookie', aud.cookie).send({ csrf: csrfTokenFor(TOKENS.auditor) });
    expect(fromToken.status).toBe(403);
    const right = await request(rig.app).post('/ui/sign-out').type('form').set('cookie', aud.cookie).send({ csrf: aud.csrf });
    expect(right.status).toBe(303);
    expect(String(right.headers['set-cookie'])).toMatch(/interlock_session=;/);
  });

  it('lists effects with their outcome and filters by outcome and subject', async () => {
    const all = await request(rig.app).get('/ui').set('cookie', await cookie(TOKENS.auditor));
    expect(all.status).toBe(200);
    expect(all.text).toContain(`/ui/effects/${committed}`);
    expect(all.text).toContain(`/ui/effects/${refused}`);
    expect(all.text).toContain('No open alerts');
    const byOutcome = await request(rig.app).get('/ui?outcome=REFUSED%3Aover_cap').set('cookie', await cookie(TOKENS.auditor));
    expect(byOutcome.text).toContain(`/ui/effects/${refused}`);
    expect(byOutcome.text).not.toContain(`/ui/effects/${committed}`);
    const otherSubject = await request(rig.app).get('/ui?subject=payment%3Api_elsewhere').set('cookie', await cookie(TOKENS.auditor));
    expect(otherSubject.text).toContain('No effects match.');
    const bad = await request(rig.app).get('/ui?state=sideways').set('cookie', await cookie(TOKENS.auditor));
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('The filter is not valid');
  });

  it("writes an effect's amounts in its currency (its premise read), in the list and on its page: the amount, the approval's cap", async () => {
    rig.target.world.set('payment:pi_uijpy', { chargebacks: [], refunded_by_others: 0, currency: 'jpy' });
    const approval = approvalBody({ scope: 'payment:pi_uijpy', cap_cents: 9_000 });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const yen = await request(rig.app).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: 'pi_uijpy', approval: approval.id, amount: 5_000 }));
    expect(yen.body.outcome).toBe('COMMITTED');
    const list = await request(rig.app).get('/ui?subject=payment%3Api_uijpy').set('cookie', await cookie(TOKENS.auditor));
    expect(list.text).toContain('<td class="num">5000 JPY</td>');
    const page = await request(rig.app).get(`/ui/effects/${String(yen.body.effect_id)}`).set('cookie', await cookie(TOKENS.auditor));
    expect(page.text).toContain('refund of 5000 JPY on');
    expect(page.text).toContain('up to 9000 JPY,');
    expect(page.text).not.toContain('$');
  });

  it('escapes everything the journal holds: a model’s markup is shown as text, and no script may run', async () => {
    const page = await request(rig.app).get(`/ui/effects/${committed}`).set('cookie', await cookie(TOKENS.auditor));
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('<script>');
    expect(page.text).not.toContain('<img src=x');
    expect(page.text).toContain(escapeHtml(HOSTILE));
    expect(page.headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect(toText(html`<p title="${'"><x'}">${['<a>', html`<b>ok</b>`]}</p>`)).toBe('<p title="&quot;&gt;&lt;x">&lt;a&gt;<b>ok</b></p>');
  });

  it('shows a character that would turn the text around it, or hide, as its escape: what the page shows is what is recorded', async () => {
    const page = await request(rig.app).get(`/ui/effects/${refused}`).set('cookie', await cookie(TOKENS.auditor));
    expect(page.status).toBe(200);
    expect(page.text).not.toMatch(/[\u202a-\u202e\u2066-\u2069\u200b-\u200f]/u);
    expect(page.text).toContain('incident \\u202e00.0002 inc_real');
    expect(toText(html`<td>${'a\u001b[2Jb\u2028c\u200bd'}</td>`)).toBe('<td>a\\u001b[2Jb\\u2028c\\u200bd</td>');
  });

  it('shows the timeline with each entry’s signature and the final money, and downloads the receipt exactly as signed', async () => {
    const page = await request(rig.app).get(`/ui/effects/${committed}`).set('cookie', await cookie(TOKENS.auditor));
    for (const kind of ['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']) expect(page.text).toContain(`> ${kind} <time`);
    expect(page.text).toContain('covered by the signature of entry');
    expect(page.text).toContain('signed, verified');
    expect(page.text).toContain('Receipt verifies');
    expect(page.text).toContain('data-testid="final-money-status">returned<');
    const download = await request(rig.app).get(`/ui/effects/${committed}/receipt`).set('cookie', await cookie(TOKENS.auditor));
    expect(download.status).toBe(200);
    expect(download.headers['content-disposition']).toBe(`attachment; filename="receipt-${committed}.json"`);
    expect(verify(JSON.parse(download.text), { publicKeys: publicKeySet([publicKeyPem(rig.stores.signingKey)]) }).valid).toBe(true);
  });

  it('never shows a page of the open alerts as all of them: past the first 20 it says more are open and where to see them all', async () => {
    const open = Array.from({ length: 35 }, (_, index) => ({ id: `not_judged:${index.toString(16).padStart(64, '0')}`, kind: 'not_judged', effectId: index.toString(16).padStart(64, '0'), subject: 'payment:pi_ui1', centsAtStake: 2_000, refund: null, disputes: [], sentence: 'Not judged.', action: 'Send it again.', raisedAt: 1, updatedAt: 1, resolvedAt: null, resolvedBy: null }));
    const alerting = createApp({ stores: rig.stores, effects: rig.queue, readFacts: async () => ({}), tokens: tokenRegistry(), logger: rig.stores.logger, alerts: async (query) => ({ data: open.slice(0, query.limit), next: null }) });
    const page = await request(alerting).get('/ui').set('cookie', (await pageSession(alerting, TOKENS.auditor)).cookie);
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('Open alerts (20)');
    expect(page.text).toContain('the 20 newest of more than 20');
    expect(page.text).toContain('npx interlock alerts');
    expect(page.text.match(/<li><strong>not judged/g)).toHaveLength(20);
  });

  it('shows support the effects but not receipts or alerts, and an approver no effects', async () => {
    const list = await request(rig.app).get('/ui').set('cookie', await cookie(TOKENS.support));
    expect(list.status).toBe(200);
    expect(list.text).not.toContain('Open alerts');
    const page = await request(rig.app).get(`/ui/effects/${committed}`).set('cookie', await cookie(TOKENS.support));
    expect(page.text).not.toContain('Download the receipt');
    expect((await request(rig.app).get(`/ui/effects/${committed}/receipt`).set('cookie', await cookie(TOKENS.support))).status).toBe(403);
    expect((await request(rig.app).get('/ui').set('cookie', await cookie(TOKENS.approver))).status).toBe(403);
    expect((await request(rig.app).get(`/ui/effects/${'0'.repeat(64)}`).set('cookie', await cookie(TOKENS.auditor))).status).toBe(404);
  });

  it('shows support what GET /v1/effects/:id shows it (each entry’s kind and time, whether the receipt verifies), not the receipt’s entries, signatures or verification', async () => {
    const detail = await request(rig.app).get(`/v1/effects/${committed}`).set(bearer(TOKENS.support));
    expect(detail.status).toBe(200);
    const page = await request(rig.app).get(`/ui/effects/${committed}`).set('cookie', await cookie(TOKENS.support));
    expect(page.status).toBe(200);
    for (const entry of detail.body.journal as { kind: string; at: string }[]) expect(page.text).toContain(`> ${entry.kind} <time datetime="${entry.at}">`);
    expect(page.text).toContain(`${detail.body.agent} under approval ${detail.body.approval}`);
    expect(page.text).toContain('data-testid="final-money-status">returned<');
    expect(page.text).toContain('Receipt verifies. Its entries, signatures and verification are shown to auditors and operators.');
    for (const receiptOnly of [escapeHtml(HOSTILE), 'Premises decided on', 'Checks before the send', 'signed, verified', 'covered by the signature of entry', 'chain intact', '<dt>Signature</dt>']) {
      expect(page.text, receiptOnly).not.toContain(receiptOnly);
    }
  });

  it('links Stripe ids to the test-mode dashboard or to the sandbox', () => {
    expect(stripeUrl('re_123', { kind: 'dashboard', mode: 'test' })).toBe('https://dashboard.stripe.com/test/refunds/re_123');
    expect(stripeUrl('pi_123', { kind: 'dashboard', mode: 'live' })).toBe('https://dashboard.stripe.com/payments/pi_123');
    expect(stripeUrl('re_123', { kind: 'sandbox', baseUrl: 'http://127.0.0.1:12111/' })).toBe('http://127.0.0.1:12111/v1/refunds/re_123');
    expect(stripeUrl('cbtx_1', { kind: 'dashboard', mode: 'test' })).toBeNull();
    expect(stripeUrl('javascript:alert(1)', { kind: 'dashboard', mode: 'test' })).toBeNull();
  });
});

describe('the queue dashboard', () => {
  const rig = rigSuite({ metrics: true });
  const cookie = async (token: string) => (await pageSession(rig.app, token)).cookie;

  it('is the operator’s, by bearer token or the page’s cookie', async () => {
    expect((await request(rig.app).get('/admin/queues')).status).toBe(401);
    expect((await request(rig.app).get('/admin/queues').set(bearer(TOKENS.auditor))).status).toBe(403);
    const page = await request(rig.app).get('/admin/queues').set('cookie', await cookie(TOKENS.operator));
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/<html/i);
    const queues = await request(rig.app).get('/admin/queues/api/queues').set(bearer(TOKENS.operator));
    expect(queues.status).toBe(200);
    const names = (queues.body.queues as { name: string; readOnlyMode: boolean }[]).map((queue) => [queue.name, queue.readOnlyMode]);
    expect(names.sort()).toEqual([
      ['decisions', true],
      ['effects', true],
      ['facts', true],
    ]);
  });

  // Rule: the board's page and its JSON (every job's payment, amount, approval, agent) are answered as the /ui pages
  // are: never stored by a browser or a proxy, never framed by another site, and without Express's own tags.
  it('is never stored or framed: its page and its JSON with the jobs are answered as the /ui pages are', async () => {
    await rig.queue.queue.add('effect', { proposal: { effect: { paymentIntent: 'pi_board', amount: 2_000 } }, recordedAt: 0 }, { jobId: 'dashboard-money', delay: 3_600_000 });
    const page = await request(rig.app).get('/admin/queues').set('cookie', await cookie(TOKENS.operator));
    const jobs = await request(rig.app).get('/admin/queues/api/queues?activeQueue=effects&status=delayed').set(bearer(TOKENS.operator));
    expect(jobs.text).toContain('pi_board');
    for (const answer of [page, jobs]) {
      expect(answer.status).toBe(200);
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(answer.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(answer.headers['x-frame-options']).toBe('DENY');
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      expect(answer.headers['x-powered-by']).toBeUndefined();
      expect(answer.headers.etag).toBeUndefined();
    }
    await rig.queue.queue.remove('dashboard-money');
  });

  it('is read-only: no retry, removal, pause or clean reaches a queue, even for an operator', async () => {
    const job = await rig.queue.queue.add('effect', { proposal: {}, recordedAt: 0 }, { jobId: 'dashboard-probe', delay: 3_600_000 });
    for (const [method, path] of [
      ['put', '/admin/queues/api/queues/effects/retry/failed'],
      ['put', `/admin/queues/api/queues/effects/${job.id}/promote`],
      ['put', '/admin/queues/api/queues/effects/pause'],
      ['put', '/admin/queues/api/queues/effects/clean/delayed'],
      ['delete', `/admin/queues/api/queues/effects/${job.id}`],
      ['post', '/admin/queues/api/queues/effects/add'],
    ] as const) {
      const answer = await request(rig.app)[method](path).set(bearer(TOKENS.operator)).send({});
      expect(answer.status, `${method} ${path}`).toBe(405);
      expect(answer.body.error.code).toBe('read_only');
    }
    expect(await rig.queue.queue.getJobState('dashboard-probe')).toBe('delayed');
  });
});
