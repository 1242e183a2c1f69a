// Rule (final-money.ts deriveSecondCompensation; apply.ts creditCurrency): the credit's currency is its own balance
// transaction's, else what its chain says (its `currency` premise), so a usd note for the incident is weighed against a
// usd credit whose commit summary did not record the currency, as the facts worker and the pre-send check weigh it.
import { describe, expect, it } from 'vitest';
import { effectIdFor as chainEffectId } from '../../src/core/effect-id.js';
import type { Draft } from '../../src/core/entries.js';
import { buildReceipt } from '../../src/core/receipt.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { checks, drafts, sealChain, snapshot, T0 } from './entry-chain.js';

const INCIDENT = 'INC-old';
const { key, publicKeys } = testKey();
const effect = { kind: 'credit', customer: 'cus_chain', amount: 500, incident: INCIDENT };
const premises = { subscription_status: null, incident_compensation: 0, currency: 'usd' };
const approval = snapshot({ scope: 'customer:cus_chain' });
const landed = (result: Record<string, unknown>) => [
  { ...drafts.proposed(), effect, premises },
  drafts.authorized(approval),
  { ...drafts.dispatched(), effect, premises, checks: checks({ approval }) },
  { kind: 'COMMITTED', via: 'send', result, found: 'cbtxn_own', rechecked: null, epoch: 1 } as const,
];
const note = (id: string, amount: number, currency?: string) => drafts.observed({ objectType: 'credit_note', objectId: id, eventType: 'credit_note.created', status: 'issued', amount, charge: null, incident: INCIDENT, ...(currency === undefined ? {} : { currency }) });
const verified = (name: string, head: readonly unknown[], facts: readonly Draft<'OBSERVED'>[]) => {
  const effectId = chainEffectId({ requestId: name, effect });
  const result = verify(JSON.parse(JSON.stringify(buildReceipt(effectId, sealChain(effectId, [...head, ...facts] as never, key), key, T0 + 60_000))), { publicKeys });
  expect(result.problems).toEqual([]);
  return result;
};

describe('credit notes and the credit currency', () => {
  it('a commit summary without currency: the premise currency says usd, and a usd note is weighed as usd', () => {
    const result = verified('no-commit-currency', landed({ id: 'cbtxn_own', object: 'customer_balance_transaction', amount: -500 }), [note('cn_usd', 200, 'usd')]);
    expect(result.compensatedTwice).toMatchObject({ cents: 200, notesCents: 200, currency: 'usd', elsewhere: [] });
  });
});
