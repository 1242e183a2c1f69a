// Rule: a late_landing alert states the money that landed in the landed object's own currency (the LATE_RESULT's
// summary names it: a refund's, a balance credit's): a ¥5000 balance credit that landed after the gate settled its
// effect is "5000 JPY" at stake, not a currency unknown, and never "$50.00".
import { describe, expect, it } from 'vitest';
import { alertsFor } from '../../src/core/alert-rules.js';
import { effectIdFor } from '../../src/core/effect-id.js';
import type { Draft, EntryKind } from '../../src/core/entries.js';
import type { JsonObject } from '../../src/core/json.js';
import { moneyText } from '../../src/core/money-text.js';
import { buildReceipt } from '../../src/core/receipt.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { checks, drafts, refundObject, sealChain, snapshot, T0 } from './entry-chain.js';

const { key, publicKeys } = testKey();

function lateLandingAlert(name: string, effect: JsonObject, scope: string, result: JsonObject) {
  const premises = effect.kind === 'credit' ? { subscription_status: null, incident_compensation: 0 } : { chargebacks: [] };
  const approval = snapshot({ scope, capCents: 1_000_000 });
  const refused: Draft<'REFUSED'> = { kind: 'REFUSED', code: 'REFUSED:target_error', reason: 'Stripe said 400', checks: null, rechecked: null, changes: [], resolves: true };
  const late: Draft<'LATE_RESULT'> = { kind: 'LATE_RESULT', owner: 'facts', epoch: 1, outcome: 'landed', result, error: null };
  const list: Draft<EntryKind>[] = [{ ...drafts.proposed(), effect, premises }, drafts.authorized(approval), { ...drafts.dispatched(), effect, premises, checks: checks({ approval }) }, refused, late];
  const effectId = effectIdFor({ requestId: name, effect });
  const verification = verify(JSON.parse(JSON.stringify(buildReceipt(effectId, sealChain(effectId, list, key), key, T0 + 60_000))), { publicKeys });
  expect(verification.problems).toEqual([]);
  return alertsFor(verification).find((alert) => alert.kind === 'late_landing');
}

describe('a late_landing alert', () => {
  it('on a jpy balance credit is in jpy: 5000 JPY', () => {
    const credit = { kind: 'credit', customer: 'cus_yen', amount: 5_000, incident: 'INC-yen' };
    const alert = lateLandingAlert('late-yen-credit', credit, 'customer:cus_yen', { id: 'cbtxn_yen', object: 'customer_balance_transaction', type: 'adjustment', amount: -5_000, currency: 'jpy', customer: 'cus_yen', created: 1 });
    expect(alert).toMatchObject({ centsAtStake: 5_000, currency: 'jpy', refund: 'cbtxn_yen' });
    expect(moneyText(alert?.centsAtStake ?? 0, alert?.currency ?? null)).toBe('5000 JPY');
  });

  it('on a eur refund is in eur: 20.00 EUR', () => {
    const refund = { kind: 'refund', paymentIntent: 'pi_eur', amount: 2_000, reason: 'requested_by_customer' };
    const alert = lateLandingAlert('late-eur-refund', refund, 'payment:pi_eur', refundObject('re_eur', { currency: 'eur' }));
    expect(alert).toMatchObject({ centsAtStake: 2_000, currency: 'eur' });
    expect(moneyText(alert?.centsAtStake ?? 0, alert?.currency ?? null)).toBe('20.00 EUR');
  });
});
