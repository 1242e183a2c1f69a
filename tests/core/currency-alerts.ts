// The alerts the facts call for on money that did not move in dollars, from receipts sealed and verified with the real
// code: a 20.00 EUR refund charged back (exposure) and one that failed after it landed, and a 1000 JPY balance credit
// that landed in a currency the customer is not billed in. The drafts are what a facts worker raises, so a test can
// follow their currency through the alert store, the inbox and what each shows.
import { expect } from 'vitest';
import { alertsFor, type AlertDraft } from '../../src/core/alert-rules.js';
import { effectIdFor } from '../../src/core/effect-id.js';
import type { Draft } from '../../src/core/entries.js';
import { buildReceipt } from '../../src/core/receipt.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { chainReceipt, checks, drafts, refundObject, sealChain, snapshot, T0 } from './entry-chain.js';

const { key, publicKeys } = testKey();

function checked(receipt: unknown) {
  const verification = verify(JSON.parse(JSON.stringify(receipt)), { publicKeys });
  expect(verification.problems).toEqual([]);
  return verification;
}

function refundAlerts(name: string, currency: string, facts: readonly Draft<'OBSERVED'>[]): AlertDraft[] {
  return alertsFor(checked(chainReceipt(name, [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_cur', { result: refundObject('re_cur', { currency }) }), ...facts], key)));
}

function only(alerts: readonly AlertDraft[], kind: AlertDraft['kind']): AlertDraft {
  const found = alerts.filter((alert) => alert.kind === kind);
  expect(found).toHaveLength(1);
  return found[0] as AlertDraft;
}

/** A 20.00 EUR refund whose charge was then charged back (100.00 EUR, awaiting a response). */
export function eurExposure(): AlertDraft {
  const chargeback = drafts.observed({ objectType: 'dispute', objectId: 'du_cur', eventType: 'charge.dispute.created', status: 'needs_response', disputeStatus: 'needs_response', amount: 10_000, charge: 'ch_chain' });
  return only(refundAlerts('eur-exposure-shown', 'eur', [chargeback]), 'exposure');
}

/** A 20.00 EUR refund Stripe failed after accepting it. */
export function eurFailedRefund(): AlertDraft {
  const failed = drafts.observed({ objectType: 'refund', objectId: 're_cur', status: 'failed', failureReason: 'expired_or_canceled_card', amount: 2_000 });
  return only(refundAlerts('eur-failed-shown', 'eur', [failed]), 'failed_after_landed');
}

/** A 1000 JPY balance credit that landed while the customer is billed in usd. */
export function jpyCreditMismatch(): AlertDraft {
  const credit = { kind: 'credit', customer: 'cus_cur', amount: 1_000, incident: 'INC-cur' };
  const premises = { subscription_status: null, incident_compensation: 0 };
  const approval = snapshot({ scope: 'customer:cus_cur', capCents: 1_000_000 });
  const chain = [
    { ...drafts.proposed(), effect: credit, premises },
    drafts.authorized(approval),
    { ...drafts.dispatched(), effect: credit, premises, checks: checks({ approval }) },
    { kind: 'COMMITTED', via: 'send', result: { id: 'cbtxn_own', object: 'customer_balance_transaction', amount: -1_000, currency: 'jpy', customer: 'cus_cur', type: 'adjustment', created: 1 }, found: 'cbtxn_own', rechecked: null, epoch: 1 } as const,
    drafts.observed({ objectType: 'customer_balance_transaction', objectId: 'cbtxn_own', eventType: 'customer.updated', status: 'credited', amount: -1_000, charge: null, currency: 'jpy', customerCurrency: 'usd' }),
  ];
  const effectId = effectIdFor({ requestId: 'jpy-mismatch-shown', effect: credit });
  return only(alertsFor(checked(buildReceipt(effectId, sealChain(effectId, chain, key), key, T0 + 60_000))), 'failed_after_landed');
}
