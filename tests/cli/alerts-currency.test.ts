// Rule: `interlock alerts` writes each alert's money at stake in the currency the alert records (a refund's, a
// credit's: 120.00 EUR, 1000 JPY, never dollars), and `--json` carries that currency; an alert raised before alerts
// recorded one reads as of a currency unknown, never in dollars (alerts then were in dollars whatever their currency). The alerts are the ones the facts raise (alertsFor on verified
// receipts), through the real binary.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { eurExposure, eurFailedRefund, jpyCreditMismatch } from '../core/currency-alerts.js';
import { alertsRig } from './alerts-rig.js';
import { runCli } from './run-cli.js';

const { env, alerts } = alertsRig('alerts-currency');

describe('interlock alerts, in the currency of each alert', { timeout: 90_000 }, () => {
  it('writes a EUR refund\'s alerts in euros and a JPY credit\'s in whole yen, and one with no currency as of a currency unknown', async () => {
    const ids = { eur: randomBytes(32).toString('hex'), failed: randomBytes(32).toString('hex'), jpy: randomBytes(32).toString('hex'), old: randomBytes(32).toString('hex') };
    await alerts.raise({ ...eurExposure(), effectId: ids.eur, subject: 'payment:pi_eur' });
    await alerts.raise({ ...eurFailedRefund(), effectId: ids.failed, subject: 'payment:pi_eur_failed' });
    await alerts.raise({ ...jpyCreditMismatch(), effectId: ids.jpy, subject: 'customer:cus_jpy' });
    // Raised before alerts recorded a currency: none at all.
    await alerts.raise({ kind: 'late_landing', effectId: ids.old, subject: 'payment:pi_old', centsAtStake: 2_000, refund: 're_old', disputes: [], sentence: 'A send landed after the gate had settled the effect as REFUSED:stale_premise.', action: 'Check the effect at Stripe.' });

    const shown = await runCli(['alerts'], env);
    expect(shown.code, shown.stderr).toBe(0);
    const line = (id: string) => shown.stdout.split('\n').find((text) => text.includes(id.slice(0, 12))) ?? '';
    expect(line(ids.eur)).toContain(`exposure:${ids.eur} 120.00 EUR at stake: The 20.00 EUR refund re_cur and the 100.00 EUR chargeback du_cur`);
    expect(line(ids.failed)).toContain(`failed_after_landed:${ids.failed} 20.00 EUR at stake: Refund re_cur was accepted`);
    expect(line(ids.jpy)).toContain(`failed_after_landed:${ids.jpy} 1000 JPY at stake: Balance credit cbtxn_own (1000 JPY)`);
    for (const id of [ids.eur, ids.failed, ids.jpy]) expect(line(id)).not.toContain('$');
    expect(line(ids.old)).toContain(`late_landing:${ids.old} 2000 (minor units, currency unknown) at stake:`);

    const json = await runCli(['alerts', '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    const listed = (JSON.parse(json.stdout) as { alerts: { effectId: string; currency?: string | null }[] }).alerts;
    expect(Object.fromEntries(listed.map((alert) => [alert.effectId, alert.currency]))).toEqual({ [ids.eur]: 'eur', [ids.failed]: 'eur', [ids.jpy]: 'jpy', [ids.old]: undefined });
  });
});
