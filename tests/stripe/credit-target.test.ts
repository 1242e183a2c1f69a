// The credit target against real sandbox billing objects through the official SDK (issue 9 §2 and §7): the
// premises of the billing_credit seed (scenarios.md §3.3-3.4: the subscription's status and what the incident was
// already compensated, not the balance), the keyed balance credit with its metadata, the lookup over every page,
// and the Stripe calls each costs.
import type Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEffect } from '../../src/core/effects.js';
import { Rejected, type Target } from '../../src/core/target.js';
import { createCreditTarget, CREDIT_FACTS } from '../../src/stripe/credit-target.js';
import { callsSince, effectIdFor, mark, sendContext, startStripeWorld, TEST_ATTEMPT, type StripeWorld } from './stripe-support.js';

let world: StripeWorld;
let target: Target;
let plan: Stripe.Price;
beforeAll(async () => {
  world = await startStripeWorld();
  target = createCreditTarget(world.client, { sendTimeoutMs: 2_000 });
  plan = await world.stripe.prices.create({ unit_amount: 3_000, currency: 'usd', recurring: { interval: 'month' }, product_data: { name: 'plan $30/mo' } });
});
afterAll(() => world.close());

const FACTS = [...CREDIT_FACTS];
const READ = { timeoutMs: 2_000 };
/** The gate's own premise read right before a send: what apply's checks may use instead of reading again. */
const PREMISE_CHECK = { ...READ, premiseCheck: true, attempt: TEST_ATTEMPT };
const INCIDENT = 'INC-4a1b2c';
const credit = (customer: string, amount = 1_000, incident = INCIDENT) => ({ kind: 'credit' as const, customer, amount, incident });

/** A customer paying $30/month by card, with the subscription's first invoice paid. */
async function subscriber(): Promise<{ customer: string; subscription: Stripe.Subscription; invoice: string }> {
  const customer = await world.stripe.customers.create({ name: 'Subscriber', payment_method: 'pm_card_visa', invoice_settings: { default_payment_method: 'pm_card_visa' } });
  const subscription = await world.stripe.subscriptions.create({ customer: customer.id, items: [{ price: plan.id }] });
  const invoice = typeof subscription.latest_invoice === 'string' ? subscription.latest_invoice : subscription.latest_invoice?.id;
  if (invoice === undefined) throw new Error('the subscription has no invoice');
  return { customer: customer.id, subscription, invoice };
}

describe('the credit target', () => {
  it('is tier 1, queryable, moves customer credits and reads the four credit facts', () => {
    expect(target).toMatchObject({ tier: 1, queryable: true, dedupWindowMs: 24 * 60 * 60 * 1000, kinds: ['credit'], facts: ['subscription_status', 'incident_compensation', 'currency', 'customer_currency'] });
  });
});

describe('readFacts: the premises of a goodwill credit', () => {
  it('reads a subscriber nobody compensated yet as active with nothing credited for the incident', async () => {
    const { customer } = await subscriber();
    expect(await target.readFacts(effectIdFor('fresh'), credit(customer), FACTS, READ)).toEqual({ subscription_status: 'active', incident_compensation: 0, currency: 'usd', customer_currency: 'usd' });
  });

  it('counts credit notes and the adjustments for the same incident by others, net, and nothing else', async () => {
    const { customer, invoice } = await subscriber();
    const effectId = effectIdFor('compensation');
    const adjust = (amount: number, metadata: Record<string, string>) => world.stripe.customers.createBalanceTransaction(customer, { amount, currency: 'usd', metadata });
    // This effect's own credit first: apply refuses a credit for an incident others already compensated.
    await target.apply(effectId, credit(customer), sendContext());
    await world.stripe.creditNotes.create({ invoice, amount: 1_000, credit_amount: 1_000, memo: `SLA credit for ${INCIDENT}`, metadata: { incident: INCIDENT, source: 'billing-sla-automation' } });
    await world.stripe.creditNotes.create({ invoice, amount: 500, refund_amount: 500, metadata: { incident: INCIDENT } });
    await world.stripe.creditNotes.create({ invoice, amount: 1_000, credit_amount: 1_000, metadata: { incident: 'INC-other' } });
    const voided = await world.stripe.creditNotes.create({ invoice, amount: 400, credit_amount: 400, metadata: { incident: INCIDENT } });
    await world.stripe.creditNotes.voidCreditNote(voided.id);
    await adjust(-300, { incident: INCIDENT });
    await adjust(-200, { interlock_incident: INCIDENT, interlock_effect_id: effectIdFor('another effect') });
    // A debit tagged with the incident takes back part of the tagged credits (it used to be ignored, so a credit
    // billing took back still counted as compensation).
    await adjust(100, { incident: INCIDENT });
    await adjust(-900, { incident: 'INC-other' });
    await adjust(700, { incident: 'INC-other' });
    await adjust(-50, {});
    // 1000 (credit note) + 500 (credit note refunded to the card) + 300 (by hand) + 200 (another effect) - 100 (debit).
    expect(await target.readFacts(effectId, credit(customer), ['incident_compensation'], READ)).toEqual({ incident_compensation: 1_900 });
  });

  it('reads the newest subscription\'s status, canceled included, and null for a customer without one', async () => {
    const { customer, subscription } = await subscriber();
    await world.stripe.subscriptions.cancel(subscription.id);
    expect(await target.readFacts(effectIdFor('canceled'), credit(customer), ['subscription_status'], READ)).toEqual({ subscription_status: 'canceled' });
    const loner = await world.stripe.customers.create({ name: 'No plan' });
    expect(await target.readFacts(effectIdFor('loner'), credit(loner.id), FACTS, READ)).toEqual({ subscription_status: null, incident_compensation: 0, currency: 'usd', customer_currency: 'usd' });
  });

  it('reads every page of credit notes and balance transactions', async () => {
    const paged = createCreditTarget(world.client, { sendTimeoutMs: 2_000, pageSize: 2 });
    const { customer, invoice } = await subscriber();
    for (let i = 0; i < 3; i += 1) await world.stripe.creditNotes.create({ invoice, amount: 100, credit_amount: 100, metadata: { incident: INCIDENT } });
    for (let i = 0; i < 5; i += 1) await world.stripe.customers.createBalanceTransaction(customer, { amount: -10, currency: 'usd', metadata: { incident: INCIDENT } });
    expect(await paged.readFacts(effectIdFor('pages'), credit(customer), ['incident_compensation'], READ)).toEqual({ incident_compensation: 350 });
  });

  it('reads a customer Stripe does not know as every fact null, but the currency credits go out in (the target\'s own)', async () => {
    expect(await target.readFacts(effectIdFor('ghost'), credit('cus_doesNotExist'), FACTS, READ)).toEqual({ subscription_status: null, incident_compensation: null, currency: 'usd', customer_currency: null });
    expect(await target.query(effectIdFor('ghost'), credit('cus_doesNotExist'), READ)).toBeNull();
  });
});

describe('apply: no second credit for one incident', () => {
  it('refuses a credit for an incident others already compensated before anything is sent, with the facts the gate just read', async () => {
    const { customer, invoice } = await subscriber();
    await world.stripe.creditNotes.create({ invoice, amount: 1_000, credit_amount: 1_000, metadata: { incident: INCIDENT } });
    const effectId = effectIdFor('compensated');
    // Premises decided on an incident already compensated compare equal at dispatch; apply's check is what refuses.
    expect(await target.readFacts(effectId, credit(customer), FACTS, PREMISE_CHECK)).toMatchObject({ incident_compensation: 1_000 });
    const since = await mark(world.sandbox);
    const error = await target.apply(effectId, credit(customer), sendContext()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Rejected);
    expect((error as Rejected).details).toEqual({ code: 'incident_already_compensated', status: null });
    expect((error as Rejected).message).toContain(`Incident ${INCIDENT} was already compensated $10.00`);
    expect(await callsSince(world.sandbox, since)).toEqual([]);
  });

  it('weighs only a read made for this credit\'s incident: one made under the effect id for another incident (a conflicting retry, read ahead) does not stand in', async () => {
    const { customer, invoice } = await subscriber();
    await world.stripe.creditNotes.create({ invoice, amount: 1_000, credit_amount: 1_000, metadata: { incident: INCIDENT } });
    const effectId = effectIdFor('conflicting retry');
    expect(await target.readFacts(effectId, credit(customer), FACTS, PREMISE_CHECK)).toMatchObject({ incident_compensation: 1_000 });
    // The same request id retried for another incident: its facts are read before the conflict is seen.
    expect(await target.readFacts(effectId, credit(customer, 1_000, 'INC-other'), FACTS, PREMISE_CHECK)).toMatchObject({ incident_compensation: 0 });
    const since = await mark(world.sandbox);
    await expect(target.apply(effectId, credit(customer), sendContext())).rejects.toMatchObject({ details: { code: 'incident_already_compensated' } });
    expect(await callsSince(world.sandbox, since)).toEqual([]);
  });

  it('refuses it also when nobody read the facts first, reading the credit notes and balance transactions itself', async () => {
    const { customer } = await subscriber();
    await world.stripe.customers.createBalanceTransaction(customer, { amount: -500, currency: 'usd', metadata: { interlock_incident: INCIDENT, interlock_effect_id: effectIdFor('the first credit') } });
    const since = await mark(world.sandbox);
    await expect(target.apply(effectIdFor('unread'), credit(customer), sendContext())).rejects.toMatchObject({ details: { code: 'incident_already_compensated' } });
    expect([...(await callsSince(world.sandbox, since))].sort()).toEqual([`GET /v1/customers/${customer}`, `GET /v1/customers/${customer}/balance_transactions`, 'GET /v1/credit_notes'].sort());
    expect(((await world.stripe.customers.retrieve(customer)) as Stripe.Customer).balance).toBe(-500);
  });

  it('lets a resend of a credit that already landed through, and a credit whose incident only others for other incidents compensated', async () => {
    const { customer, invoice } = await subscriber();
    await world.stripe.creditNotes.create({ invoice, amount: 1_000, credit_amount: 1_000, metadata: { incident: 'INC-other' } });
    const effectId = effectIdFor('resend');
    const first = await target.apply(effectId, credit(customer), sendContext());
    expect(await target.readFacts(effectId, credit(customer), FACTS, READ)).toMatchObject({ incident_compensation: 0 });
    await expect(target.apply(effectId, credit(customer), sendContext())).resolves.toEqual({ ...first, replayed: true });
  });
});

describe('apply and query: the credit, keyed and tagged with the effect and the incident', () => {
  it('credits the balance (a negative adjustment) with the effect id, the incident and the request in its metadata', async () => {
    const { customer } = await subscriber();
    const effectId = effectIdFor('apply');
    const landed = await target.apply(effectId, { ...credit(customer), description: 'Goodwill credit for the outage', metadata: { case_id: 'case-0123456789' } }, sendContext(2_000, { requestId: 'case-0123456789' }));
    expect(landed).toEqual({ id: expect.stringMatching(/^cbtxn_/), object: 'customer_balance_transaction', type: 'adjustment', amount: -1_000, currency: 'usd', customer, created: expect.any(Number) });
    const stored = await world.stripe.customers.retrieveBalanceTransaction(customer, String(landed.id));
    expect(stored.metadata).toEqual({ case_id: 'case-0123456789', interlock_effect_id: effectId, interlock_incident: INCIDENT, interlock_request: 'case-0123456789' });
    expect(stored.description).toBe('Goodwill credit for the outage');
    expect(((await world.stripe.customers.retrieve(customer)) as Stripe.Customer).balance).toBe(-1_000);
  });

  it('takes only as much caller metadata as fits Stripe\'s 50 keys beside the gate\'s own three: 48 keys are refused when the effect is read, the 47 allowed land', async () => {
    const { customer } = await subscriber();
    const keys = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`note_${index}`, 'v']));
    expect(() => parseEffect({ ...credit(customer), metadata: keys(48) })).toThrow(/effect\.metadata: at most 47 metadata keys/);
    const effectId = effectIdFor('metadata');
    const landed = await target.apply(effectId, parseEffect({ ...credit(customer), metadata: keys(47) }), sendContext(2_000, { requestId: 'case-metadata' }));
    const stored = await world.stripe.customers.retrieveBalanceTransaction(customer, String(landed.id));
    expect(Object.keys(stored.metadata ?? {})).toHaveLength(50);
    expect(stored.metadata).toMatchObject({ interlock_effect_id: effectId, interlock_incident: INCIDENT, interlock_request: 'case-metadata' });
  });

  it('sends under the effect id as Idempotency-Key: a second apply returns the same credit, replayed, and the customer has one', async () => {
    const { customer } = await subscriber();
    const effectId = effectIdFor('twice');
    const first = await target.apply(effectId, credit(customer), sendContext());
    expect(await target.apply(effectId, credit(customer), sendContext())).toEqual({ ...first, replayed: true });
    expect(((await world.stripe.customers.retrieve(customer)) as Stripe.Customer).balance).toBe(-1_000);
  });

  it('finds the credit this effect made over every page of balance transactions, and nothing for one that made none', async () => {
    const paged = createCreditTarget(world.client, { sendTimeoutMs: 2_000, pageSize: 2 });
    const { customer } = await subscriber();
    const effectId = effectIdFor('lookup');
    const own = await paged.apply(effectId, credit(customer), sendContext());
    for (let i = 0; i < 5; i += 1) await world.stripe.customers.createBalanceTransaction(customer, { amount: -10, currency: 'usd', metadata: { interlock_effect_id: effectIdFor(`other ${i}`) } });
    const since = await mark(world.sandbox);
    expect(await paged.query(effectId, credit(customer), READ)).toEqual(own);
    expect(await callsSince(world.sandbox, since)).toHaveLength(3);
    expect(await paged.query(effectIdFor('never sent'), credit(customer), READ)).toBeNull();
  });

  it('returns the credit that matches the effect when several balance transactions carry its id (the oldest of equals) and names the others', async () => {
    const { customer } = await subscriber();
    const effectId = effectIdFor('tagged twice');
    const tagged = (amount: number) => world.stripe.customers.createBalanceTransaction(customer, { amount, currency: 'usd', metadata: { interlock_effect_id: effectId } });
    const own = await tagged(-1_000);
    const smaller = await tagged(-300);
    const copy = await tagged(-1_000);
    expect(await target.query(effectId, credit(customer, 1_000), READ)).toMatchObject({ id: own.id, amount: -1_000, others_with_effect_id: [copy.id, smaller.id] });
    expect(await target.query(effectId, credit(customer, 300), READ)).toMatchObject({ id: smaller.id, amount: -300, others_with_effect_id: [copy.id, own.id] });
    expect(await target.query(effectId, credit(customer, 700), READ)).toBeNull();
  });
});

describe('the credit\'s currency', () => {
  it('refuses before the network a credit in another currency than the customer\'s balance, from the read its premises made, and credits in the currency it is given', async () => {
    const customer = (await world.stripe.customers.create({ name: 'Kunde' })).id;
    await world.stripe.customers.createBalanceTransaction(customer, { amount: -200, currency: 'eur', description: 'opening credit' });
    const effectId = effectIdFor('eur customer');
    await target.readFacts(effectId, credit(customer), FACTS, PREMISE_CHECK);
    const since = await mark(world.sandbox);
    const refusal = await target.apply(effectId, credit(customer), sendContext()).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(Rejected);
    expect(refusal).toMatchObject({ details: { code: 'currency_mismatch', status: null }, message: expect.stringContaining('eur') });
    expect(await callsSince(world.sandbox, since)).toEqual([]);
    // Without a premise read, apply reads the balance transactions itself; still nothing is sent.
    await expect(target.apply(effectIdFor('eur, unread'), credit(customer), sendContext())).rejects.toMatchObject({ details: { code: 'currency_mismatch' } });
    expect((await callsSince(world.sandbox, since)).filter((call) => call.startsWith('POST'))).toEqual([]);
    const euros = createCreditTarget(world.client, { sendTimeoutMs: 2_000, currency: 'eur' });
    await expect(euros.apply(effectIdFor('in eur'), credit(customer), sendContext())).resolves.toMatchObject({ amount: -1_000, currency: 'eur' });
    // A customer with no balance yet takes the credit in the target's currency, which becomes theirs.
    const fresh = (await world.stripe.customers.create({ name: 'New' })).id;
    await expect(euros.apply(effectIdFor('fresh in eur'), credit(fresh), sendContext())).resolves.toMatchObject({ currency: 'eur' });
  });
});

describe('the currency a customer is billed in, before any balance transaction', () => {
  // A subscriber billed in eur who was never credited has no balance transaction, but Stripe's customer.currency is
  // eur already (its first invoice set it): a usd credit would be refused after the dispatch, or kept in a usd
  // balance that never reduces its eur invoices. It is refused before the network, as for a customer with eur credits.
  it('refuses a usd credit to a eur subscriber with no balance transaction yet, nothing sent, and gives it a eur credit', async () => {
    const euroPlan = await world.stripe.prices.create({ unit_amount: 3_000, currency: 'eur', recurring: { interval: 'month' }, product_data: { name: 'plan 30 EUR/mo' } });
    const customer = (await world.stripe.customers.create({ name: 'Kundin', payment_method: 'pm_card_visa', invoice_settings: { default_payment_method: 'pm_card_visa' } })).id;
    await world.stripe.subscriptions.create({ customer, items: [{ price: euroPlan.id }] });
    expect(((await world.stripe.customers.retrieve(customer)) as Stripe.Customer).currency).toBe('eur');
    expect((await world.stripe.customers.listBalanceTransactions(customer)).data).toEqual([]);
    const effectId = effectIdFor('eur subscriber');
    await target.readFacts(effectId, credit(customer), FACTS, PREMISE_CHECK);
    const since = await mark(world.sandbox);
    const refusal = await target.apply(effectId, credit(customer), sendContext()).catch((error: unknown) => error);
    expect(refusal).toMatchObject({ details: { code: 'currency_mismatch', status: null }, message: expect.stringContaining('billed in eur') });
    // Without a premise read, apply reads the customer itself; still nothing is sent.
    await expect(target.apply(effectIdFor('eur subscriber, unread'), credit(customer), sendContext())).rejects.toMatchObject({ details: { code: 'currency_mismatch' } });
    expect((await callsSince(world.sandbox, since)).filter((call) => call.startsWith('POST'))).toEqual([]);
    const euros = createCreditTarget(world.client, { sendTimeoutMs: 2_000, currency: 'eur' });
    await expect(euros.apply(effectIdFor('eur subscriber in eur'), credit(customer), sendContext())).resolves.toMatchObject({ amount: -1_000, currency: 'eur' });
  });
});

describe('Stripe calls per premise check and send', () => {
  it('costs four reads, made together, and the create: Stripe has no request that returns the customer\'s currency, subscriptions, credit notes and balance transactions', async () => {
    const { customer } = await subscriber();
    const effectId = effectIdFor('count');
    const since = await mark(world.sandbox);
    await target.readFacts(effectId, credit(customer), FACTS, PREMISE_CHECK);
    const reads = await callsSince(world.sandbox, since);
    expect([...reads].sort()).toEqual([`GET /v1/customers/${customer}`, `GET /v1/customers/${customer}/balance_transactions`, 'GET /v1/credit_notes', 'GET /v1/subscriptions'].sort());
    const afterReads = await mark(world.sandbox);
    await target.apply(effectId, credit(customer), sendContext());
    expect(await callsSince(world.sandbox, afterReads)).toEqual([`POST /v1/customers/${customer}/balance_transactions`]);
  });

  it('costs one read for a check of the subscription alone', async () => {
    const { customer } = await subscriber();
    const since = await mark(world.sandbox);
    await target.readFacts(effectIdFor('status only'), credit(customer), ['subscription_status'], READ);
    expect(await callsSince(world.sandbox, since)).toEqual(['GET /v1/subscriptions']);
  });
});
