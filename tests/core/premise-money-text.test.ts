// Rule: a stale premise's change states a fact that is money (a refund's `refundable` and `refunded_by_others`, a
// credit's `incident_compensation`, in the smallest unit of the `currency` premise) as that money beside its number,
// in the currency the premises name: "refundable: was 10000 (100.00 EUR), now 7500 (75.00 EUR)", never a bare 10000
// under a heading of "30.00 EUR at stake" that a reader takes for €10,000. The refusal's reason, its inbox item's
// `happened` and the page's "Facts that changed" table say it alike; the structured changes keep the bare numbers.
// Premises that name no currency, or two (a credit decided in usd, read by a worker set to jpy), keep the bare numbers.
import { describe, expect, it } from 'vitest';
import { comparePremises } from '../../src/core/decisions.js';
import { effectIdFor } from '../../src/core/effect-id.js';
import type { Draft } from '../../src/core/entries.js';
import { inboxItemFor } from '../../src/core/inbox.js';
import type { JsonObject } from '../../src/core/json.js';
import type { InboxItem } from '../../src/interlock.js';
import { summaryOf } from '../../webhooks/api/effect-view.js';
import { inboxItemPage } from '../../webhooks/ui/inbox-pages.js';
import { effectPage } from '../../webhooks/ui/pages.js';
import { testKey } from '../support/harness.js';
import { checks, drafts, sealChain } from './entry-chain.js';

const { key } = testKey();

describe('the sentence of a changed money premise', () => {
  const decided = { chargebacks: [], refunded_by_others: 0, refundable: 10_000, charge_status: 'succeeded', currency: 'eur' };
  const now = { ...decided, refunded_by_others: 2_500, refundable: 7_500 };

  it('states a refund\'s money facts in the payment\'s currency, and keeps the numbers in the changes', () => {
    expect(comparePremises(decided, now, 'refund')).toEqual({
      violations: ['refunded_by_others: was 0 (0.00 EUR), now 2500 (25.00 EUR)', 'refundable: was 10000 (100.00 EUR), now 7500 (75.00 EUR)'],
      changes: [
        { field: 'refunded_by_others', was: 0, now: 2_500 },
        { field: 'refundable', was: 10_000, now: 7_500 },
      ],
    });
  });

  it('writes each currency its own way, and a fact that is no number as its JSON', () => {
    const yen = { refundable: 5_000, currency: 'jpy' };
    expect(comparePremises(yen, { ...yen, refundable: 4_000 }, 'refund').violations).toEqual(['refundable: was 5000 (5000 JPY), now 4000 (4000 JPY)']);
    expect(comparePremises({ refundable: 5_000, currency: 'usd' }, { refundable: null, currency: null }, 'refund').violations).toEqual(['refundable: was 5000 ($50.00), now null', 'currency: was "usd", now null']);
  });

  it('states a credit\'s incident_compensation in the credit\'s currency', () => {
    const credit = { subscription_status: 'active', incident_compensation: 0, currency: 'eur' };
    expect(comparePremises(credit, { ...credit, incident_compensation: 1_000 }, 'credit').violations).toEqual(['incident_compensation: was 0 (0.00 EUR), now 1000 (10.00 EUR)']);
  });

  it('keeps the bare numbers when the premises name no currency, or two, and for facts that are not money', () => {
    expect(comparePremises({ refunded_by_others: 0 }, { refunded_by_others: 100 }, 'refund').violations).toEqual(['refunded_by_others: was 0, now 100']);
    const usd = { incident_compensation: 0, currency: 'usd' };
    expect(comparePremises(usd, { incident_compensation: 700, currency: 'jpy' }, 'credit').violations[0]).toBe('incident_compensation: was 0, now 700');
    // `refundable` is no credit's fact: a target's other fact of that name is not taken for money.
    expect(comparePremises({ refundable: 1, currency: 'eur' }, { refundable: 2, currency: 'eur' }, 'credit').violations).toEqual(['refundable: was 1, now 2']);
  });
});

describe('the stale_premise item of an eur refund', () => {
  const effect: JsonObject = { kind: 'refund', paymentIntent: 'pi_eur', amount: 3_000, reason: 'requested_by_customer' };
  const decided = { chargebacks: [], refunded_by_others: 0, refundable: 10_000, charge_status: 'succeeded', currency: 'eur' };
  const { violations, changes } = comparePremises(decided, { ...decided, refunded_by_others: 2_500, refundable: 7_500 }, 'refund');
  const effectId = effectIdFor({ requestId: 'rq-eur', effect });
  const refused: Draft<'REFUSED'> = { kind: 'REFUSED', code: 'REFUSED:stale_premise', reason: violations.join('; '), checks: checks({ violations, changes }), rechecked: null, changes, resolves: false };
  const entries = sealChain(effectId, [{ ...drafts.proposed(), effect, premises: decided }, refused], key);
  const draft = inboxItemFor(effectId, 'payment:pi_eur', entries, null);
  if (draft === null) throw new Error('the refusal opened no item');
  const item: InboxItem = { ...draft, openedAt: 1_700_000_000_000, status: 'open', closure: null };

  it('says what happened in EUR, beside the money at stake', () => {
    expect(item.currency).toBe('eur');
    expect(item.happened).toContain('refundable: was 10000 (100.00 EUR), now 7500 (75.00 EUR)');
    expect(item.changes).toEqual(changes);
  });

  it('shows the money in its page\'s "Facts that changed" table', () => {
    const text = inboxItemPage({ viewer: { name: 'alex', role: 'approver', csrf: 'token', sections: [] }, item, canAct: true, canOpenEffects: true, notice: null, error: null }).text;
    expect(text).toContain('30.00 EUR at stake');
    expect(text).toContain('<tr><td>refundable</td><td><code>10000</code> (100.00 EUR)</td><td><code>7500</code> (75.00 EUR)</td></tr>');
    expect(text).toContain('<tr><td>refunded_by_others</td><td><code>0</code> (0.00 EUR)</td><td><code>2500</code> (25.00 EUR)</td></tr>');
    // A fact that is no money keeps its JSON alone, and an item whose currency changed from one to another its numbers.
    const moved: InboxItem = { ...item, changes: [...changes, { field: 'currency', was: 'usd', now: 'eur' }] };
    const movedText = inboxItemPage({ viewer: { name: 'alex', role: 'approver', csrf: 'token', sections: [] }, item: moved, canAct: true, canOpenEffects: true, notice: null, error: null }).text;
    expect(movedText).toContain('<tr><td>refundable</td><td><code>10000</code></td><td><code>7500</code></td></tr>');
    expect(movedText).toContain('<tr><td>currency</td><td><code>&quot;usd&quot;</code></td><td><code>&quot;eur&quot;</code></td></tr>');
  });

  it('shows the money on the effect page too, beside each changed premise of the refusal', () => {
    const text = effectPage({
      viewer: { name: 'op', role: 'operator', csrf: 'x', sections: [] },
      summary: summaryOf(effectId, 'payment:pi_eur', entries, null),
      detail: { journal: [], final_money: { status: 'not_sent' }, exposure: null, answer: null, answer_from: null, answer_matches_final_money: null, receipt_valid: null },
      receipt: { entries, signatures: [], verification: { valid: true, entries: entries.length, chainIntact: true, happened: false, happenedOnce: false, problems: [] } as never },
      links: { kind: 'dashboard', mode: 'test' },
      canDownload: false,
    }).text;
    expect(text).toContain('<dt>Premise change</dt><dd><code>refundable</code>: was <code>10000</code> (100.00 EUR), now <code>7500</code> (75.00 EUR)</dd>');
    expect(text).toContain('<li>Premise <code>refunded_by_others</code> changed: was <code>0</code> (0.00 EUR), now <code>2500</code> (25.00 EUR)</li>');
    expect(text).not.toContain('<code>charge_status</code>: was <code>&quot;succeeded&quot;</code> (');
  });
});
