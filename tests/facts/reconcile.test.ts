// Reconciliation when webhooks were missed (issue 10 §3): with every webhook dropped at Stripe (a sandbox rule), one
// `interlock reconcile --since 1h` re-reads the committed effects and brings their receipts to the very answers the
// webhooks gave for the same cases (a refund failed by a chargeback inside the window; a refund that stood and a
// chargeback after it, with its exposure and alert), from re-reads alone (source `reread`); a second pass appends
// nothing. A bad --since is refused with exit 2 and says what it takes.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../../queues/facts.js';
import { duration } from '../../src/cli/failure.js';
import { runCli, tempDir } from '../cli/run-cli.js';
import { answerOf, disputeOf, pay, startFactsRig, type FactsRig } from './facts-rig.js';

let rig: FactsRig;
let dir: { dir: string; remove(): void };
let env: Record<string, string>;

beforeAll(async () => {
  rig = await startFactsRig();
  dir = tempDir('reconcile');
  writeFileSync(join(dir.dir, 'signing-key.pem'), rig.signingKeyPem, { mode: 0o600 });
  env = {
    REDIS_URL: rig.config.redisUrl,
    INTERLOCK_KEY_PREFIX: rig.config.keyPrefix,
    INTERLOCK_UNSAFE_DURABILITY: '1',
    INTERLOCK_DATA_DIR: join(dir.dir, 'data'),
    INTERLOCK_SIGNING_KEY_FILE: join(dir.dir, 'signing-key.pem'),
    STRIPE_SECRET_KEY: 'sk_test_interlockReconcile0001',
    STRIPE_API_BASE: rig.sandbox.url,
  };
}, 60_000);

afterAll(async () => {
  await rig?.close();
  dir?.remove();
});

/** The seeds' inquiry case: a $20 refund committed on a $100 inquiry payment, then the inquiry escalated within or after the window. */
async function inquiryCase(escalated: 'within the window' | 'after the window'): Promise<string> {
  const { paymentIntent } = await pay(rig.stripe, 'pm_card_createDisputeInquiry', 10_000);
  const effectId = await rig.refund(paymentIntent, 2_000);
  const inquiry = await disputeOf(rig.stripe, paymentIntent);
  if (escalated === 'after the window') {
    await rig.until(effectId, (v) => v.finalMoney.refunds[0]?.status === 'succeeded');
    await rig.sandbox.control.advanceClock(120);
  }
  await rig.sandbox.control.request('POST', `/disputes/${inquiry.id}/escalate`);
  return effectId;
}

describe('reconciliation re-reads alone', () => {
  it('with every webhook dropped, `interlock reconcile --since 1h` brings the receipts to the answers the webhooks gave', async () => {
    const heardWithin = await inquiryCase('within the window');
    await rig.until(heardWithin, (v) => v.finalMoney.status === 'not_returned' && v.finalMoney.disputes.some((d) => d.status === 'needs_response'));
    const heardAfter = await inquiryCase('after the window');
    await rig.until(heardAfter, (v) => v.exposure !== null);
    await rig.sandbox.control.idle();
    await rig.drained();

    await rig.sandbox.control.addRule({ action: 'drop', count: 10_000 });
    try {
      const missedWithin = await inquiryCase('within the window');
      const missedAfter = await inquiryCase('after the window');
      await rig.sandbox.control.idle();
      await rig.drained();
      // Nothing reached the service: the receipts know only what the send answered.
      for (const effectId of [missedWithin, missedAfter]) expect((await rig.receipt(effectId)).finalMoney.disputes).toEqual([]);
      const deliveries = await rig.sandbox.control.deliveries({ type: 'charge.dispute.updated' });
      expect(deliveries.length).toBeGreaterThan(0);

      const pass = await runCli(['reconcile', '--since', '1h'], env);
      expect(pass.code, pass.stderr).toBe(0);
      expect(JSON.parse(pass.stdout)).toMatchObject({ since: expect.any(String), effects: expect.any(Number), appended: expect.any(Number) });
      expect((JSON.parse(pass.stdout) as { appended: number }).appended).toBeGreaterThan(0);

      expect(answerOf(await rig.receipt(missedWithin))).toEqual(answerOf(await rig.receipt(heardWithin)));
      expect(answerOf(await rig.receipt(missedAfter))).toEqual(answerOf(await rig.receipt(heardAfter)));
      expect(answerOf(await rig.receipt(missedWithin))).toMatchObject({ happened: true, status: 'not_returned', failureReason: 'charge_for_pending_refund_disputed' });
      expect(answerOf(await rig.receipt(missedAfter))).toMatchObject({ status: 'returned', exposure: 2_000 });
      for (const effectId of [missedWithin, missedAfter]) {
        const observed = await rig.observed(effectId);
        expect(observed.length).toBeGreaterThan(0);
        expect(observed.every((entry) => entry.source === 'reread' && entry.eventId === null)).toBe(true);
      }
      const alerts = await rig.stores.alerts.list();
      expect(alerts.find((alert) => alert.effectId === missedAfter)?.kind).toBe('exposure');
      expect(alerts.find((alert) => alert.effectId === missedWithin)?.kind).toBe('failed_after_landed');
      // Every exposure alert opens an escalation inbox item (issue 13 §4): money is out twice until the dispute is answered.
      expect(await rig.stores.inbox.get(`exposure:${missedAfter}`)).toMatchObject({ kind: 'exposure', status: 'open', centsAtStake: 2_000, actions: ['dismiss'] });

      // Nothing changed at Stripe since: a second pass (the one the facts role runs on its schedule) appends nothing.
      const now = await rig.stores.journal.serverTime();
      expect(await reconcile(rig.stores, rig.facts, now - 3_600_000)).toMatchObject({ appended: 0 });
    } finally {
      await rig.sandbox.control.clearRules();
    }
  }, 90_000);

  it('reads --since as a whole number of s, m, h or d, and refuses anything else, saying what a duration is', () => {
    const since = duration('--since', 400 * 86_400_000);
    expect([since('30s'), since('30m'), since('72h'), since('7d')]).toEqual([30_000, 1_800_000, 259_200_000, 604_800_000]);
    for (const bad of ['72', '3w', '0h', '-5m', '1.5h', '401d', '', 'h', '1e3s']) expect(() => since(bad), bad).toThrow(/--since must be a duration/);
  });

  it('the command refuses a bad --since, and --since with --hours, with exit 2', async () => {
    const [bad, both] = await Promise.all([runCli(['reconcile', '--since', '3w'], env), runCli(['reconcile', '--since', '2h', '--hours', '2'], env)]);
    expect([bad.code, both.code]).toEqual([2, 2]);
    expect(bad.stderr).toContain('--since must be a duration');
    expect(both.stderr).toContain('not both');
  });
});
