// The escalation inbox on the page (issue 13 §4), without a browser: the list and one item with the facts that changed,
// the three actions as forms for approvers only, each form needing the session's CSRF token, this origin and the
// person's own token typed in, and a form that works records the same signed RESOLVED entry as the API, naming the
// signed-in token.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { publicKeyPem, publicKeySet, verify, type Receipt } from '../../src/interlock.js';
import { inboxSuite } from '../http/inbox-items.js';
import { pageSession } from '../http/page-sessions.js';
import { TOKENS } from '../http/rig.js';

const cookie = async (token: string) => (await pageSession(rig.app, token)).cookie;
const csrf = async (token: string) => (await pageSession(rig.app, token)).csrf;

const { rig, make } = inboxSuite();

async function post(path: string, token: string, fields: Record<string, string>) {
  return request(rig.app).post(path).type('form').set('Cookie', await cookie(token)).set('sec-fetch-site', 'same-origin').send({ csrf: await csrf(token), token, ...fields });
}

describe.concurrent('the inbox page', () => {
  it('lists open items and shows one with the facts that changed; approvers get the forms, auditors do not, support may not read it', async () => {
    const { item, effectId } = await make.stale();
    const list = await request(rig.app).get('/ui/inbox').set('Cookie', await cookie(TOKENS.auditor));
    expect(list.status).toBe(200);
    expect(list.text).toContain(`href="/ui/inbox/${item}"`);
    expect(list.text).toContain('<a href="/ui/inbox">Inbox</a>');
    const asAuditor = await request(rig.app).get(`/ui/inbox/${item}`).set('Cookie', await cookie(TOKENS.auditor));
    expect(asAuditor.status).toBe(200);
    expect(asAuditor.text).toContain('<caption>Facts that changed</caption>');
    expect(asAuditor.text).toContain('<td>chargebacks</td><td><code>[]</code></td><td><code>[&quot;du_opened&quot;]</code></td>');
    expect(asAuditor.text).toContain(`href="/ui/effects/${effectId}"`);
    expect(asAuditor.text).not.toContain('<form method="post" action="/ui/inbox/');
    const asApprover = await request(rig.app).get(`/ui/inbox/${item}`).set('Cookie', await cookie(TOKENS.approver));
    expect(asApprover.text).toContain(`action="/ui/inbox/${item}/reapprove"`);
    expect(asApprover.text).toContain(`action="/ui/inbox/${item}/dismiss"`);
    expect(asApprover.text).not.toContain(`action="/ui/inbox/${item}/resolve"`);
    expect(asApprover.text).toContain('<label for="approval">New approval id</label>');
    expect((await request(rig.app).get('/ui/inbox').set('Cookie', await cookie(TOKENS.support))).status).toBe(403);
  });

  it('resolving from the page records a signed entry naming the approver and shows the item closed', async () => {
    const { item, effectId } = await make.ambiguous();
    const form = await request(rig.app).get(`/ui/inbox/${item}`).set('Cookie', await cookie(TOKENS.approver));
    expect(form.text).toContain('<legend>What Stripe shows</legend>');
    const done = await post(`/ui/inbox/${item}/resolve`, TOKENS.approver, { resolution: 'landed', note: 'The refund shows on the payment.' });
    expect(done.status, done.text).toBe(303);
    expect(done.headers.location).toBe(`/ui/inbox/${item}?done=resolve`);
    const shown = await request(rig.app).get(done.headers.location as string).set('Cookie', await cookie(TOKENS.approver));
    expect(shown.text).toContain('alex (approver) chose <strong>resolve</strong> (it landed)');
    const receipt = (await rig.stores.journal.receipt(effectId)) as Receipt;
    const verification = verify(receipt, { publicKeys: publicKeySet([publicKeyPem(rig.stores.signingKey)]) });
    expect(verification).toMatchObject({ valid: true, answer: 'returned', answerFrom: 'operator', operatorActions: [{ action: 'resolve', by: { name: 'alex', role: 'approver' } }] });
  });

  it('shows only its own confirmation sentences after an action, and only for the action that closed the item: text an attacker puts in ?done= never reaches the page', async () => {
    const { item } = await make.stale();
    const planted = 'Call +1-555-0100 to confirm your refund';
    for (const done of [planted, encodeURIComponent(`<b>${planted}</b>`), 'Dismissed', 'constructor', 'toString']) {
      const page = await request(rig.app).get(`/ui/inbox/${item}?done=${encodeURIComponent(done)}`).set('Cookie', await cookie(TOKENS.approver));
      expect(page.status).toBe(200);
      expect(page.text).not.toContain('555-0100');
      expect(page.text).not.toContain('Recorded:');
      expect(page.text).not.toContain('role="status"');
    }
    // Its own sentence only once the item was closed by that action: a link saying an open item was dismissed, or a
    // dismissed one re-approved, would tell a person that something was handled that nobody handled.
    const open = await request(rig.app).get(`/ui/inbox/${item}?done=dismiss`).set('Cookie', await cookie(TOKENS.approver));
    expect(open.text).not.toContain('role="status"');
    const dismiss = await request(rig.app).post(`/ui/inbox/${item}/dismiss`).type('form').set('Cookie', await cookie(TOKENS.approver)).set('sec-fetch-site', 'same-origin').send({ csrf: await csrf(TOKENS.approver), note: 'handled by phone', token: TOKENS.approver });
    expect(dismiss.status).toBe(303);
    const dismissed = await request(rig.app).get(`/ui/inbox/${item}?done=dismiss`).set('Cookie', await cookie(TOKENS.approver));
    expect(dismissed.text).toContain('Dismissed. The entry is signed on the effect&#39;s receipt.');
    for (const other of ['resolve', 'reapprove']) {
      expect((await request(rig.app).get(`/ui/inbox/${item}?done=${other}`).set('Cookie', await cookie(TOKENS.approver))).text).not.toContain('role="status"');
    }
  });

  it('refuses a form without the session\'s CSRF token, from another site, from a role that may not act, or incomplete; nothing is recorded', async () => {
    const { item, effectId } = await make.stale();
    const noCsrf = await request(rig.app).post(`/ui/inbox/${item}/dismiss`).type('form').set('Cookie', await cookie(TOKENS.approver)).set('sec-fetch-site', 'same-origin').send({ note: 'x', token: TOKENS.approver });
    expect(noCsrf.status).toBe(403);
    const crossSite = await request(rig.app).post(`/ui/inbox/${item}/dismiss`).type('form').set('Cookie', await cookie(TOKENS.approver)).set('sec-fetch-site', 'cross-site').send({ csrf: await csrf(TOKENS.approver), note: 'x', token: TOKENS.approver });
    expect(crossSite.status).toBe(403);
    const auditor = await post(`/ui/inbox/${item}/dismiss`, TOKENS.auditor, { note: 'not mine' });
    expect(auditor.status).toBe(403);
    const empty = await post(`/ui/inbox/${item}/dismiss`, TOKENS.approver, { note: '   ' });
    expect(empty.status).toBe(400);
    expect(empty.text).toContain('role="alert"');
    const notAllowed = await post(`/ui/inbox/${item}/resolve`, TOKENS.approver, { resolution: 'landed', note: 'x' });
    expect(notAllowed.status).toBe(409);
    const receipt = (await rig.stores.journal.receipt(effectId)) as Receipt;
    expect(receipt.entries.some((entry) => entry.kind === 'RESOLVED')).toBe(false);
    // And then a good one goes through, naming the approver who sent it.
    const dismissed = await post(`/ui/inbox/${item}/dismiss`, TOKENS.danaApprover, { note: 'Handled by phone.' });
    expect(dismissed.status).toBe(303);
    expect((await rig.stores.inbox.get(item))?.closure).toMatchObject({ action: 'dismiss', by: { name: 'dana', role: 'approver' } });
  });

  it('takes every note the form allows (2,000 characters of Japanese; line breaks sent as CRLF) and says which field is wrong when one is', async () => {
    const { item } = await make.stale();
    const form = await request(rig.app).get(`/ui/inbox/${item}`).set('Cookie', await cookie(TOKENS.approver));
    expect(form.text).toContain('name="note" required maxlength="2000"');
    // 2,000 characters of Japanese are 18 kB once the browser percent-encodes them.
    const japanese = '顧客に電話で確認し、返金済みであることを確認しました。'.repeat(100).slice(0, 2_000);
    const tooLong = await post(`/ui/inbox/${item}/dismiss`, TOKENS.approver, { note: `${japanese}。` });
    expect(tooLong.status).toBe(400);
    expect(tooLong.text).toContain('the note is longer than 2000 characters');
    // A 2,000-character note with line breaks, as a browser sends it (each line break CRLF): taken as typed.
    const typed = 'Checked the payment in the dashboard.\n'.repeat(20).padEnd(2_000, '.');
    const withBreaks = await post(`/ui/inbox/${item}/dismiss`, TOKENS.approver, { note: typed.replace(/\n/g, '\r\n') });
    expect(withBreaks.status).toBe(303);
    expect((await rig.stores.inbox.get(item))?.closure?.note).toBe(typed);
    const other = await make.stale();
    expect((await post(`/ui/inbox/${other.item}/dismiss`, TOKENS.approver, { note: japanese })).status).toBe(303);
  });
});
