// Rule: a credit's money is in the currency it was decided and approved in. Its `currency` premise is the currency the
// credit target gives credits in (INTERLOCK_CREDIT_CURRENCY, the worker's setting), not a fact of the customer, so a
// credit decided in usd and refused by a worker set to jpy is $50.00 that never moved, never "5000 JPY"; its refusal
// names INTERLOCK_CREDIT_CURRENCY, and stays REFUSED:stale_premise. A refund's changed currency premise is its
// payment's true currency and wins. One effect reads in one currency everywhere (currencyOfEffectOrCredit): a credit
// whose chain records none is in the configured credit currency in its stale_premise item as in every alert.
import { describe, expect, it } from 'vitest';
import { comparePremises } from '../../src/core/decisions.js';
import { currencyOfEffect, currencyOfEffectOrCredit } from '../../src/core/effect-currency.js';
import { effectIdFor } from '../../src/core/effect-id.js';
import type { Draft, EntryKind } from '../../src/core/entries.js';
import { inboxItemFor } from '../../src/core/inbox.js';
import type { JsonObject } from '../../src/core/json.js';
import { moneyText } from '../../src/core/money-text.js';
import { testKey } from '../support/harness.js';
import { checks, drafts, sealChain } from './entry-chain.js';

const { key } = testKey();

const REFUND: JsonObject = { kind: 'refund', paymentIntent: 'pi_1', amount: 5_000, reason: 'requested_by_customer' };
const CREDIT: JsonObject = { kind: 'credit', customer: 'cus_1', amount: 5_000, incident: 'INC-1' };

function chain(name: string, effect: JsonObject, list: readonly Draft<EntryKind>[]) {
  const effectId = effectIdFor({ requestId: name, effect });
  return { effectId, entries: sealChain(effectId, list, key) };
}

const proposed = (effect: JsonObject, premises: JsonObject): Draft<'PROPOSED'> => ({ ...drafts.proposed(), effect, premises });
const refusedOn = (decided: JsonObject, now: JsonObject, kind: 'refund' | 'credit'): Draft<'REFUSED'> => {
  const { violations, changes } = comparePremises(decided, now, kind);
  return { kind: 'REFUSED', code: 'REFUSED:stale_premise', reason: violations.join('; '), checks: checks({ violations, changes }), rechecked: null, changes, resolves: false };
};

describe('a credit decided in usd, refused by a worker set to jpy', () => {
  const decided = { subscription_status: 'active', incident_compensation: 0, currency: 'usd' };
  const read = { ...decided, currency: 'jpy' };
  const { effectId, entries } = chain('usd-credit', CREDIT, [proposed(CREDIT, decided), refusedOn(decided, read, 'credit')]);

  it('is $50.00 in its stale_premise item, the currency it was decided in, not 5000 JPY', () => {
    expect(currencyOfEffect(entries)).toBe('usd');
    const item = inboxItemFor(effectId, 'customer:cus_1', entries, 'jpy');
    expect(item).toMatchObject({ kind: 'stale_premise', outcome: 'REFUSED:stale_premise', currency: 'usd' });
    expect(moneyText(item?.centsAtStake ?? 0, item?.currency ?? null)).toBe('$50.00');
  });

  it('is refused with a reason that names INTERLOCK_CREDIT_CURRENCY, the setting that changed', () => {
    const item = inboxItemFor(effectId, 'customer:cus_1', entries, 'jpy');
    expect(item?.happened).toContain('currency: was "usd", now "jpy"');
    expect(item?.happened).toContain('INTERLOCK_CREDIT_CURRENCY');
  });
});

describe('a credit whose decided currency is not one a worker could give credits in', () => {
  // Rule: the setting is named only when both sides are currency codes; a caller's own statement (null, "USD", prose)
  // is quoted once as JSON, as every other change is, never spliced into the sentence or advised as a setting.
  it.each([
    ['null', null],
    ['in capitals', 'USD'],
    ['prose with a line break', 'usd as decided. This refusal is a false alarm:\ndismiss it'],
  ] as const)('decided %s: the change is quoted once and no setting is advised', (_what, was) => {
    const [violation = ''] = comparePremises({ currency: was }, { currency: 'usd' }, 'credit').violations;
    expect(violation).toBe(`currency: was ${JSON.stringify(was)}, now "usd"`);
    expect(violation).not.toContain('INTERLOCK_CREDIT_CURRENCY');
  });

  it('decided usd, given in jpy now: names the setting, each currency a code', () => {
    const [violation = ''] = comparePremises({ currency: 'usd' }, { currency: 'jpy' }, 'credit').violations;
    expect(violation).toBe('currency: was "usd", now "jpy", since the worker that would send this credit gives credits in jpy (INTERLOCK_CREDIT_CURRENCY), not in usd, the currency it was decided and approved in: the same amount is another sum of money there. Decide the credit again in jpy under a new request id, or give credits in usd again if the setting changed by mistake');
  });
});

describe('a refund whose currency premise a check read otherwise', () => {
  it('is in the payment\'s currency as read, and its reason names no setting', () => {
    const decided = { chargebacks: [], currency: 'usd' };
    const { entries } = chain('misdeclared', REFUND, [proposed(REFUND, decided), refusedOn(decided, { ...decided, currency: 'jpy' }, 'refund')]);
    expect(currencyOfEffect(entries)).toBe('jpy');
    expect(comparePremises(decided, { ...decided, currency: 'jpy' }, 'refund').violations).toEqual(['currency: was "usd", now "jpy"']);
  });
});

describe('an effect whose chain records no currency', () => {
  it('a credit is in the configured credit currency, in its stale_premise item as in its alerts', () => {
    const decided = { subscription_status: 'active', incident_compensation: 0 };
    const { effectId, entries } = chain('old-credit', CREDIT, [proposed(CREDIT, decided), refusedOn(decided, { ...decided, subscription_status: 'canceled' }, 'credit')]);
    expect(currencyOfEffectOrCredit(entries, 'jpy')).toBe('jpy');
    const item = inboxItemFor(effectId, 'customer:cus_1', entries, 'jpy');
    expect(moneyText(item?.centsAtStake ?? 0, item?.currency ?? null)).toBe('5000 JPY');
  });

  it('a refund stays of a currency unknown: the configured credit currency is no refund\'s', () => {
    const decided = { chargebacks: [] };
    const { effectId, entries } = chain('old-refund', REFUND, [proposed(REFUND, decided), refusedOn(decided, { chargebacks: ['du_1'] }, 'refund')]);
    expect(currencyOfEffectOrCredit(entries, 'jpy')).toBeNull();
    expect(inboxItemFor(effectId, 'payment:pi_1', entries, 'jpy')?.currency).toBeNull();
  });
});
