// Rule: a credit's money reads in one currency everywhere, the one it was decided in. A credit of 5000 decided under
// INTERLOCK_CREDIT_CURRENCY=usd and refused by a worker now set to jpy is $50.00 that never moved, in its stale_premise
// item and the API summary, and its refusal names INTERLOCK_CREDIT_CURRENCY; a credit proposed without its currency
// premise reads in the configured credit currency in its stale_premise item as in its model_deviated item. Against the
// Stripe sandbox, through the gate and the queue.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CREDIT_FACTS, currencyOfEffect, effectIdFor, moneyText, openInboxItem, type InboxItem } from '../../src/interlock.js';
import { summaryOf } from '../../webhooks/api/effect-view.js';
import { approvalTerms } from '../support/harness.js';
import { sharedFactsRig, waitFor } from '../facts/facts-rig.js';

const rig = sharedFactsRig({ config: { creditCurrency: 'jpy' } });

const itemOf = (id: string): Promise<InboxItem> => waitFor(`inbox item ${id}`, () => rig.stores.inbox.get(id), 5_000);

describe('a credit\'s currency, as decided', () => {
  it('a usd credit refused by a worker set to jpy is $50.00 in its stale_premise item and summary, refused on INTERLOCK_CREDIT_CURRENCY', async () => {
    const customer = await rig.stripe.customers.create({ name: 'Dollar subscriber' });
    const terms = approvalTerms({ scope: `customer:${customer.id}`, capCents: 5_000 });
    await rig.stores.approvals.grant(terms);
    const effect = { kind: 'credit' as const, customer: customer.id, amount: 5_000, incident: `INC-${randomBytes(3).toString('hex')}` };
    const requestId = `case-${randomBytes(4).toString('hex')}`;
    const read = await rig.target.readFacts(effectIdFor({ requestId, effect }), effect, CREDIT_FACTS, { timeoutMs: 5_000 });
    // The facts as an API process still set to usd read them when the credit was decided.
    const recorded = await rig.effects.propose({ requestId, agent: 'support-bot', approval: terms.id, premises: { ...read, currency: 'usd' }, effect });
    expect(await rig.effects.waitFor(recorded.effectId, 15_000)).toMatchObject({ outcome: 'REFUSED:stale_premise' });
    const item = await itemOf(`stale_premise:${recorded.effectId}`);
    const entries = await rig.stores.journal.entries(`customer:${customer.id}`, recorded.effectId);
    expect(currencyOfEffect(entries)).toBe('usd');
    expect(summaryOf(recorded.effectId, `customer:${customer.id}`, entries, 'jpy').currency).toBe('usd');
    expect(moneyText(item?.centsAtStake ?? 0, item?.currency ?? null)).toBe('$50.00');
    expect(item?.happened).toContain('INTERLOCK_CREDIT_CURRENCY');
  });

  it('a credit proposed without its currency premise reads alike in its stale_premise and model_deviated items', async () => {
    const customer = await rig.stripe.customers.create({ name: 'Yen subscriber' });
    const terms = approvalTerms({ scope: `customer:${customer.id}`, capCents: 5_000 });
    await rig.stores.approvals.grant(terms);
    const effect = { kind: 'credit' as const, customer: customer.id, amount: 5_000, incident: 'INC-yen-old' };
    // subscription_status is wrong (the customer has none), so the credit is refused on a stale premise.
    const recorded = await rig.effects.propose({ requestId: `case-${randomBytes(4).toString('hex')}`, agent: 'support-bot', approval: terms.id, premises: { subscription_status: 'active', incident_compensation: 0 }, effect });
    expect(await rig.effects.waitFor(recorded.effectId, 15_000)).toMatchObject({ outcome: 'REFUSED:stale_premise' });
    const stale = await itemOf(`stale_premise:${recorded.effectId}`);
    const { item: deviated } = await openInboxItem(rig.stores, { effectId: recorded.effectId, happened: 'deviated', centsAtStake: 5_000 });
    expect(moneyText(stale?.centsAtStake ?? 0, stale?.currency ?? null)).toBe('5000 JPY');
    expect(moneyText(deviated.centsAtStake, deviated.currency ?? null)).toBe('5000 JPY');
    // So does its summary, which the API and the effect page show.
    const entries = await rig.stores.journal.entries(`customer:${customer.id}`, recorded.effectId);
    expect(summaryOf(recorded.effectId, `customer:${customer.id}`, entries, rig.stores.config.creditCurrency).currency).toBe('jpy');
  });
});
