// Rule (credit-target.ts header, incidentCompensation): `incident_compensation` nets the adjustments tagged with the
// incident per currency and counts those in the credit's currency only: Stripe keeps a balance per currency, so a debit
// tagged with the incident in eur takes nothing back of billing's usd credit for it, and a credit in eur compensates
// nothing on a usd customer's invoices.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Target } from '../../src/core/target.js';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import { effectIdFor, startStripeWorld, type StripeWorld } from './stripe-support.js';

let world: StripeWorld;
let target: Target;
beforeAll(async () => {
  world = await startStripeWorld();
  target = createCreditTarget(world.client, { sendTimeoutMs: 2_000 });
});
afterAll(() => world.close());

const billing = (incident: string) => ({ incident, source: 'billing-sla-automation' });

it('a tagged debit in another currency does not take back billing\'s credit for the incident', async () => {
  const customer = await world.stripe.customers.create({ name: 'usd credit, eur debit' });
  const incident = 'INC-eurdebit';
  await world.stripe.customers.createBalanceTransaction(customer.id, { amount: -700, currency: 'usd', metadata: billing(incident) });
  await world.stripe.customers.createBalanceTransaction(customer.id, { amount: 700, currency: 'eur', metadata: billing(incident) });
  const effect = { kind: 'credit' as const, customer: customer.id, amount: 1_000, incident };
  expect(await target.readFacts(effectIdFor('eur debit'), effect, ['incident_compensation'], { timeoutMs: 2_000 })).toEqual({ incident_compensation: 700 });
});

it('a tagged credit in another currency is no compensation in the credit\'s currency', async () => {
  const customer = await world.stripe.customers.create({ name: 'usd customer, eur credit' });
  const incident = 'INC-eurcredit';
  await world.stripe.customers.createBalanceTransaction(customer.id, { amount: -100, currency: 'usd', metadata: { note: 'opening balance' } });
  await world.stripe.customers.createBalanceTransaction(customer.id, { amount: -700, currency: 'eur', metadata: billing(incident) });
  const effect = { kind: 'credit' as const, customer: customer.id, amount: 1_000, incident };
  expect(await target.readFacts(effectIdFor('eur credit'), effect, ['incident_compensation'], { timeoutMs: 2_000 })).toEqual({ incident_compensation: 0 });
});
