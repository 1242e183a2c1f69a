// Rule (core/final-money.ts collectMoneyFacts): Stripe deletes a customer once and never undeletes it, so the first
// customer_deleted fact recorded on a credit's chain stands. A second one (a customer.deleted replayed or edited under
// another event id, recorded by a version that did not refuse it) saying a balance of 0 does not turn the lost credit
// back into a returned one.
import { describe, expect, it } from 'vitest';
import { CUSTOMER_DELETED, collectMoneyFacts, deriveFinalMoney } from '../../src/core/final-money.js';

const committed = { kind: 'COMMITTED', via: 'send', result: { id: 'cbtxn_own', object: 'customer_balance_transaction', amount: -1_000, currency: 'usd' }, found: 'cbtxn_own', rechecked: null, epoch: 1 };
const deleted = (eventId: string, amount: number) => ({ kind: 'OBSERVED', source: 'webhook', eventId, eventType: 'customer.deleted', objectType: 'customer_balance_transaction', objectId: 'cbtxn_own', status: CUSTOMER_DELETED, failureReason: null, amount, charge: null, disputeStatus: null, disputeReason: null, created: 1, customerCurrency: 'usd' });
// The credit as the facts read it from Stripe: its own balance transaction, in the customer's currency.
const own = { kind: 'OBSERVED', source: 'webhook', eventId: 'evt_credit', eventType: 'customer.updated', objectType: 'customer_balance_transaction', objectId: 'cbtxn_own', status: 'posted', failureReason: null, amount: -1_000, charge: null, disputeStatus: null, disputeReason: null, created: 1, currency: 'usd', customerCurrency: 'usd' };
const chain = (...observed: ReturnType<typeof deleted>[]) => [committed, own, ...observed] as unknown as Parameters<typeof collectMoneyFacts>[0];

describe('a credit whose customer was deleted twice over', () => {
  it('reads the first deletion recorded, whatever a later one says', () => {
    const facts = collectMoneyFacts(chain(deleted('evt_first', -1_000), deleted('evt_replayed', 0)));
    expect(facts.deletion).toEqual({ credit: 'cbtxn_own', balance: -1_000, currency: 'usd' });
    expect(deriveFinalMoney(facts, true, 'credit', ['cbtxn_own'], 1_000)).toMatchObject({ status: 'not_returned', failureReason: CUSTOMER_DELETED, customerDeleted: { cents: 1_000 } });
  });

  it('keeps a first deletion that found the credit used, whatever a later one says', () => {
    const facts = collectMoneyFacts(chain(deleted('evt_first', 0), deleted('evt_edited', -1_000)));
    expect(deriveFinalMoney(facts, true, 'credit', ['cbtxn_own'], 1_000)).toMatchObject({ status: 'returned', failureReason: null });
  });
});
