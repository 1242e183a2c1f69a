// Rule (credit-target.ts header, incidentCompensation; final-money.ts deriveSecondCompensation): amounts in different
// currencies are never added or compared. A credit note for the incident in another currency than the credit's (a usd
// customer's ¥700 note on its jpy invoice) is not in `incident_compensation`, which stays cents in the credit's currency
// (a number, as recorded premises have it); it still compensates the incident, so apply refuses the credit on it,
// stating it in its own currency ("700 JPY"), never as $7.00. A landed credit's compensated_twice names such a note in
// its own currency, does not weigh it against the credit (what is left of the credit is at stake), and a note fact that
// recorded no currency (written before facts carried one) is of a currency unknown, never taken for the credit's.
import type Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alertsFor } from '../../src/core/alert-rules.js';
import { effectIdFor as chainEffectId } from '../../src/core/effect-id.js';
import type { Draft } from '../../src/core/entries.js';
import { buildReceipt } from '../../src/core/receipt.js';
import { Rejected, type Target } from '../../src/core/target.js';
import { verify } from '../../src/core/verify.js';
import { createCreditTarget, CREDIT_FACTS } from '../../src/stripe/credit-target.js';
import { testKey } from '../support/harness.js';
import { checks, drafts, sealChain, snapshot, T0 } from '../core/entry-chain.js';
import { callsSince, effectIdFor, mark, sendContext, startStripeWorld, TEST_ATTEMPT, type StripeWorld } from './stripe-support.js';

let world: StripeWorld;
let target: Target;
beforeAll(async () => {
  world = await startStripeWorld();
  target = createCreditTarget(world.client, { sendTimeoutMs: 2_000 });
});
afterAll(() => world.close());

const INCIDENT = 'INC-yen';
const PREMISE_CHECK = { timeoutMs: 2_000, premiseCheck: true, attempt: TEST_ATTEMPT };
const credit = (customer: string) => ({ kind: 'credit' as const, customer, amount: 500, incident: INCIDENT });

/** A customer billed in usd (a finalized usd invoice) with a finalized jpy invoice beside it, and its usd invoice. */
async function usdCustomerWithJpyInvoice(): Promise<{ customer: string; usd: string; jpy: string }> {
  const customer = await world.stripe.customers.create({ name: 'Billed in usd, one jpy invoice' });
  const invoice = async (currency: string) => {
    await world.stripe.invoiceItems.create({ customer: customer.id, amount: 3_000, currency });
    const draft = await world.stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: 'include' });
    return (await world.stripe.invoices.finalizeInvoice(draft.id ?? '')).id ?? '';
  };
  const usd = await invoice('usd');
  const jpy = await invoice('jpy');
  expect(((await world.stripe.customers.retrieve(customer.id)) as Stripe.Customer).currency).toBe('usd');
  return { customer: customer.id, usd, jpy };
}

describe('the credit target and a credit note in another currency', () => {
  it('keeps a ¥700 note out of incident_compensation and refuses the usd credit on it, stating it as 700 JPY', async () => {
    const { customer, jpy } = await usdCustomerWithJpyInvoice();
    const note = await world.stripe.creditNotes.create({ invoice: jpy, amount: 700, metadata: { incident: INCIDENT } });
    const effectId = effectIdFor('yen note');
    expect(await target.readFacts(effectId, credit(customer), [...CREDIT_FACTS], PREMISE_CHECK)).toMatchObject({ incident_compensation: 0, currency: 'usd' });
    const since = await mark(world.sandbox);
    const error = await target.apply(effectId, credit(customer), sendContext()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Rejected);
    expect((error as Rejected).details).toEqual({ code: 'incident_already_compensated', status: null });
    expect((error as Rejected).message).toContain(`Incident ${INCIDENT} was already compensated 700 JPY (credit note ${note.id})`);
    expect((error as Rejected).message).not.toContain('$7.00');
    expect(await callsSince(world.sandbox, since)).toEqual([]);
  });

  it('counts a usd note in the premise and states a jpy one beside it in its own currency, the two never added', async () => {
    const { customer, usd, jpy } = await usdCustomerWithJpyInvoice();
    await world.stripe.creditNotes.create({ invoice: usd, amount: 300, metadata: { incident: INCIDENT } });
    const yen = await world.stripe.creditNotes.create({ invoice: jpy, amount: 700, metadata: { incident: INCIDENT } });
    const effectId = effectIdFor('both notes');
    expect(await target.readFacts(effectId, credit(customer), [...CREDIT_FACTS], PREMISE_CHECK)).toMatchObject({ incident_compensation: 300 });
    const error = await target.apply(effectId, credit(customer), sendContext()).catch((e: unknown) => e);
    expect((error as Rejected).message).toContain(`was already compensated $3.00 and 700 JPY (credit note ${yen.id})`);
    expect((error as Rejected).message).not.toContain('$10.00');
  });
});

describe('compensated_twice and a credit note in another currency', () => {
  const { key, publicKeys } = testKey();
  const effect = { kind: 'credit', customer: 'cus_chain', amount: 500, incident: INCIDENT };
  const premises = { subscription_status: null, incident_compensation: 0, currency: 'usd' };
  const approval = snapshot({ scope: 'customer:cus_chain' });
  const landed = [
    { ...drafts.proposed(), effect, premises },
    drafts.authorized(approval),
    { ...drafts.dispatched(), effect, premises, checks: checks({ approval }) },
    { kind: 'COMMITTED', via: 'send', result: { id: 'cbtxn_own', object: 'customer_balance_transaction', amount: -500, currency: 'usd' }, found: 'cbtxn_own', rechecked: null, epoch: 1 } as const,
  ];
  const note = (id: string, amount: number, currency?: string) => drafts.observed({ objectType: 'credit_note', objectId: id, eventType: 'credit_note.created', status: 'issued', amount, charge: null, incident: INCIDENT, ...(currency === undefined ? {} : { currency }) });
  const verified = (name: string, facts: readonly Draft<'OBSERVED'>[]) => {
    const effectId = chainEffectId({ requestId: name, effect });
    const result = verify(JSON.parse(JSON.stringify(buildReceipt(effectId, sealChain(effectId, [...landed, ...facts], key), key, T0 + 60_000))), { publicKeys });
    expect(result.problems).toEqual([]);
    return result;
  };

  it('names a ¥700 note as 700 JPY, does not weigh it against the $5.00 credit, and puts what is left of the credit at stake', () => {
    const result = verified('yen', [note('cn_yen', 700, 'jpy')]);
    expect(result.compensatedTwice).toMatchObject({ cents: 500, ownCents: 500, notesCents: 0, currency: 'usd', creditNotes: ['cn_yen'], elsewhere: [{ creditNote: 'cn_yen', amount: 700, currency: 'jpy' }] });
    expect(result.compensatedTwice?.sentence).toContain('credit note cn_yen (700 JPY) also compensates');
    const alert = alertsFor(result).find((a) => a.kind === 'compensated_twice');
    expect(alert).toMatchObject({ centsAtStake: 500, currency: 'usd', compensations: ['cn_yen'] });
    expect(alert?.sentence).toContain("this effect's $5.00 balance credit landed and billing's credit note cn_yen (700 JPY) covers it too");
    expect(JSON.stringify([result.compensatedTwice, alert])).not.toContain('$7.00');
  });

  it('still weighs a note in the credit\'s currency: the smaller of the two, with the foreign one stated beside it', () => {
    expect(verified('usd-small', [note('cn_usd', 200, 'usd')]).compensatedTwice).toMatchObject({ cents: 200, notesCents: 200, elsewhere: [] });
    const both = verified('usd-and-yen', [note('cn_usd', 200, 'usd'), note('cn_yen', 700, 'jpy')]).compensatedTwice;
    expect(both).toMatchObject({ cents: 500, notesCents: 200, creditNotes: ['cn_usd', 'cn_yen'] });
    expect(both?.sentence).toContain('credit note cn_usd, cn_yen ($2.00 and 700 JPY)');
  });

  it('reads a note fact that recorded no currency as of a currency unknown, never as the credit\'s', () => {
    const old = verified('old-note', [note('cn_old', 700)]).compensatedTwice;
    expect(old).toMatchObject({ cents: 500, notesCents: 0, elsewhere: [{ creditNote: 'cn_old', amount: 700, currency: null }] });
    expect(old?.sentence).toContain('credit note cn_old (700 (minor units, currency unknown))');
    expect(old?.sentence).not.toContain('$7.00');
  });
});
