// Rule (credit-target.ts header, incidentCompensation): `incident_compensation` is the cents the customer was already
// given for the effect's incident by others. Billing's SLA credit for the incident that billing then took back with a
// debit tagged with the same incident left the customer nothing for it: the tagged adjustments count net, so the
// gate's credit is not refused as "already compensated" and the customer is compensated once. A debit beyond the
// tagged credits counts as nothing (never less): it does not undo a credit note, which only voiding does. The
// adjustments are netted per currency and only those in the credit's currency are in the premise: Stripe keeps a
// balance per currency, so a debit tagged with the incident in eur takes nothing back of billing's usd credit for it.
// A net credit tagged with it in eur is not in the premise (a number in the credit's currency; ¥ and € are never added
// to cents), but it compensates the incident on the customer's eur invoices, so apply refuses the credit on it before
// the send (incident_already_compensated), naming it in eur.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Rejected, type Target } from '../../src/core/target.js';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import { effectIdFor, sendContext, startStripeWorld, type StripeWorld } from './stripe-support.js';

let world: StripeWorld;
let target: Target;
beforeAll(async () => {
  world = await startStripeWorld();
  target = createCreditTarget(world.client, { sendTimeoutMs: 2_000 });
});
afterAll(() => world.close());

const billing = (incident: string) => ({ incident, source: 'billing-sla-automation' });

it('a billing credit for the incident that billing took back in full does not count as compensation', async () => {
  const customer = await world.stripe.customers.create({ name: 'taken back' });
  const incident = 'INC-takenback';
  await world.stripe.customers.createBalanceTransaction(customer.id, { amount: -700, currency: 'usd', metadata: billing(incident) });
  await world.stripe.customers.createBalanceTransaction(customer.id, { amount: 700, currency: 'usd', description: 'SLA credit issued in error', metadata: billing(incident) });
  const effect = { kind: 'credit' as const, customer: customer.id, amount: 700, incident };
  expect(await target.readFacts(effectIdFor('after take-back'), effect, ['incident_compensation'], { timeoutMs: 2_000 })).toEqual({ incident_compensation: 0 });
});

it('a billing credit taken back in part counts what is left of it; a debit beyond the credits does not take back a credit note', async () => {
  const customer = await world.stripe.customers.create({ name: 'partly taken back' });
  const incident = 'INC-partly';
  await world.stripe.customers.createBalanceTransaction(customer.id, { amount: -700, currency: 'usd', metadata: billing(incident) });
  await world.stripe.customers.createBalanceTransaction(customer.id, { amount: 300, currency: 'usd', metadata: billing(incident) });
  const effect = { kind: 'credit' as const, customer: customer.id, amount: 700, incident };
  expect(await target.readFacts(effectIdFor('partly taken back'), effect, ['incident_compensation'], { timeoutMs: 2_000 })).toEqual({ incident_compensation: 400 });

  const noted = await world.stripe.customers.create({ name: 'note and a debit' });
  await world.stripe.invoiceItems.create({ customer: noted.id, amount: 3_000, currency: 'usd' });
  const draft = await world.stripe.invoices.create({ customer: noted.id, pending_invoice_items_behavior: 'include' });
  const invoice = await world.stripe.invoices.finalizeInvoice(draft.id ?? '');
  await world.stripe.creditNotes.create({ invoice: invoice.id ?? '', amount: 500, metadata: { incident } });
  await world.stripe.customers.createBalanceTransaction(noted.id, { amount: 900, currency: 'usd', metadata: billing(incident) });
  const onNoted = { ...effect, customer: noted.id };
  expect(await target.readFacts(effectIdFor('note and a debit'), onNoted, ['incident_compensation'], { timeoutMs: 2_000 })).toEqual({ incident_compensation: 500 });
});

it('a tagged debit in another currency does not take back billing\'s credit for the incident', async () => {
  const customer = await world.stripe.customers.create({ name: 'usd credit, eur debit' });
  const incident = 'INC-eurdebit';
  await world.stripe.customers.createBalanceTransaction(customer.id, { amount: -700, currency: 'usd', metadata: billing(incident) });
  await world.stripe.customers.createBalanceTransaction(customer.id, { amount: 700, currency: 'eur', metadata: billing(incident) });
  const effect = { kind: 'credit' as const, customer: customer.id, amount: 1_000, incident };
  expect(await target.readFacts(effectIdFor('eur debit'), effect, ['incident_compensation'], { timeoutMs: 2_000 })).toEqual({ incident_compensation: 700 });
});

it('a tagged credit in another currency is not in the premise, and refuses the credit before the send all the same', async () => {
  const customer = await world.stripe.customers.create({ name: 'usd customer, eur credit' });
  const incident = 'INC-eurcredit';
  await world.stripe.invoiceItems.create({ customer: customer.id, amount: 3_000, currency: 'usd' });
  const draft = await world.stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: 'include' });
  await world.stripe.invoices.finalizeInvoice(draft.id ?? '');
  const euro = await world.stripe.customers.createBalanceTransaction(customer.id, { amount: -700, currency: 'eur', metadata: billing(incident) });
  const effect = { kind: 'credit' as const, customer: customer.id, amount: 1_000, incident };
  expect(await target.readFacts(effectIdFor('eur credit'), effect, ['incident_compensation'], { timeoutMs: 2_000 })).toEqual({ incident_compensation: 0 });
  const refused = await target.apply(effectIdFor('eur credit sent'), effect, sendContext(2_000, { attempt: null })).catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(Rejected);
  expect((refused as Rejected).details.code).toBe('incident_already_compensated');
  expect((refused as Rejected).message).toContain(`7.00 EUR (balance credit ${euro.id})`);
});
