// Rule: the page writes an alert's money at stake, and its exposure's inbox item's, in the currency the alert records
// (a refund's, a credit's: 120.00 EUR, 1000 JPY, never dollars); an alert or item stored before they recorded one
// reads as of a currency unknown, never in dollars: alerts then were written in dollars whatever their money's currency. The alerts are the ones the facts raise (alertsFor on verified receipts), raised
// as the facts worker raises them, so an exposure opens its item the same way.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { raiseAlert } from '../../src/interlock.js';
import type { AlertDraft } from '../../src/core/alert-rules.js';
import { eurExposure, eurFailedRefund, jpyCreditMismatch } from '../core/currency-alerts.js';
import { pageSession } from '../http/page-sessions.js';
import { startRig, TOKENS, type Rig } from '../http/rig.js';

const effectId = () => randomBytes(32).toString('hex');

describe('money at stake on the page, in its currency', () => {
  let rig: Rig | undefined;
  const started = (): Rig => {
    if (rig === undefined) throw new Error('the rig is used before its beforeAll ran');
    return rig;
  };
  const ids = { eur: effectId(), failed: effectId(), jpy: effectId(), old: effectId() };
  const cookie = async (token: string) => (await pageSession(started().app, token)).cookie;

  beforeAll(async () => {
    // The page's alerts as the composition root wires them (src/main.ts).
    rig = await startRig({ deps: { alerts: (query) => started().stores.alerts.page(query) } });
    const raise = (draft: AlertDraft, id: string, subject: string) => raiseAlert(started().stores, { ...draft, effectId: id, subject });
    await raise(eurExposure(), ids.eur, 'payment:pi_eur');
    await raise(eurFailedRefund(), ids.failed, 'payment:pi_eur_failed');
    await raise(jpyCreditMismatch(), ids.jpy, 'customer:cus_jpy');
    // An exposure raised before alerts recorded a currency: no `currency` at all, on the alert and on its item.
    await raiseAlert(started().stores, { kind: 'exposure', effectId: ids.old, subject: 'payment:pi_old', centsAtStake: 2_000, refund: 're_old', disputes: ['du_old'], sentence: 'The $20.00 refund re_old and the $20.00 chargeback du_old both took money from the merchant.', action: 'Reply to dispute du_old.' });
  }, 60_000);

  afterAll(async () => {
    await rig?.close();
  });

  it('lists each open alert with its money in the currency it records, and an alert with none as of a currency unknown', async () => {
    const page = await request(started().app).get('/ui').set('cookie', await cookie(TOKENS.auditor));
    expect(page.status).toBe(200);
    const line = (id: string) => /<li>.*?<\/li>/s.exec(page.text.slice(page.text.lastIndexOf('<li>', page.text.indexOf(`/ui/effects/${id}`))))?.[0] ?? '';
    expect(line(ids.eur)).toContain('<strong>exposure</strong>: 120.00 EUR at stake on <code>payment:pi_eur</code>. The 20.00 EUR refund re_cur');
    expect(line(ids.failed)).toContain('<strong>failed after landed</strong>: 20.00 EUR at stake on <code>payment:pi_eur_failed</code>.');
    expect(line(ids.jpy)).toContain('<strong>failed after landed</strong>: 1000 JPY at stake on <code>customer:cus_jpy</code>. Balance credit cbtxn_own (1000 JPY)');
    for (const id of [ids.eur, ids.failed, ids.jpy]) expect(line(id)).not.toContain('$');
    expect(line(ids.old)).toContain('<strong>exposure</strong>: 2000 (minor units, currency unknown) at stake on <code>payment:pi_old</code>.');
  });

  it('shows an exposure\'s inbox item, listed and on its own page, in its alert\'s currency, and one with none as of a currency unknown', async () => {
    const list = await request(started().app).get('/ui/inbox').set('cookie', await cookie(TOKENS.approver));
    expect(list.status).toBe(200);
    const row = (id: string) => /<tr>.*?<\/tr>/s.exec(list.text.slice(list.text.lastIndexOf('<tr>', list.text.indexOf(`/ui/inbox/exposure:${id}`))))?.[0] ?? '';
    expect(row(ids.eur)).toContain('<td><code>payment:pi_eur</code></td><td>120.00 EUR</td>');
    expect(row(ids.old)).toContain('<td><code>payment:pi_old</code></td><td>2000 (minor units, currency unknown)</td>');

    const item = await request(started().app).get(`/ui/inbox/exposure:${ids.eur}`).set('cookie', await cookie(TOKENS.approver));
    expect(item.status).toBe(200);
    expect(item.text).toContain('<h1>exposure: 120.00 EUR at stake</h1>');
    expect(item.text).toContain('The 20.00 EUR refund re_cur and the 100.00 EUR chargeback du_cur');
    const old = await request(started().app).get(`/ui/inbox/exposure:${ids.old}`).set('cookie', await cookie(TOKENS.approver));
    expect(old.text).toContain('<h1>exposure: 2000 (minor units, currency unknown) at stake</h1>');
    expect((await started().stores.inbox.get(`exposure:${ids.eur}`))?.currency).toBe('eur');
  });
});
