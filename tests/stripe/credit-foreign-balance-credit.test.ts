// Rule (credit-target.ts header: "A credit for an incident others already compensated (in the credit's currency or in
// another) is refused before the send"): billing's balance adjustments tagged with the incident are netted per
// currency, and a net credit in another currency than the credit's compensates the incident as a credit note in it
// does: Stripe applies it to the customer's next invoice in that currency (a usd customer's jpy invoice takes billing's
// ¥700). apply refuses the credit before the send (incident_already_compensated), naming it in its own currency; a
// credit there that billing took back there compensates nothing, and refuses nothing. The premise stays a number in
// the credit's currency.
import { describe, expect, it } from 'vitest';
import { Rejected } from '../../src/core/target.js';
import { approvalTerms } from '../support/harness.js';
import { effectIdFor, gateOnStripe, sendContext } from './stripe-support.js';

const { world, node, target } = gateOnStripe(
  { sendTimeoutMs: 1_500, settleMarginMs: 150, claimTtlMs: 3_000, heartbeatMs: 100, heartbeatTtlMs: 500, keyPrefix: `t-credit-foreign-balance-${Math.random().toString(36).slice(2, 10)}` },
  { kind: 'credit', workerId: 'foreign-balance' },
);

/** A customer billed in usd (its first invoice) with a jpy invoice too. */
async function usdCustomerWithJpyInvoice(name: string): Promise<string> {
  const customer = (await world.stripe.customers.create({ name })).id;
  for (const currency of ['usd', 'jpy']) {
    await world.stripe.invoiceItems.create({ customer, amount: 3_000, currency });
    const draft = await world.stripe.invoices.create({ customer, pending_invoice_items_behavior: 'include' });
    await world.stripe.invoices.finalizeInvoice(draft.id ?? '');
  }
  return customer;
}

const credit = (customer: string, incident: string) => ({ kind: 'credit' as const, customer, amount: 500, incident });
const credits = async (customer: string) => (await world.stripe.customers.listBalanceTransactions(customer)).data.filter((t) => t.type === 'adjustment' && t.amount < 0 && t.currency === 'usd');

describe("billing's balance credit for the incident in another currency", () => {
  it('refuses the credit before the send, naming it in its own currency; the premise stays 0', async () => {
    const customer = await usdCustomerWithJpyInvoice('usd, jpy balance credit');
    const yen = await world.stripe.customers.createBalanceTransaction(customer, { amount: -700, currency: 'jpy', description: 'SLA credit', metadata: { incident: 'INC-yen' } });
    expect(await target.readFacts(effectIdFor('yen premise'), credit(customer, 'INC-yen'), ['incident_compensation'], { timeoutMs: 2_000 })).toEqual({ incident_compensation: 0 });
    const error = await target.apply(effectIdFor('yen'), credit(customer, 'INC-yen'), sendContext(2_000, { attempt: null })).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(Rejected);
    expect((error as Rejected).details.code).toBe('incident_already_compensated');
    expect((error as Rejected).message).toContain(`was already compensated 700 JPY (balance credit ${yen.id})`);
    expect(await credits(customer)).toHaveLength(0);
  });

  it('through the gate: REFUSED:target_error, nothing sent', async () => {
    const customer = await usdCustomerWithJpyInvoice('usd, jpy balance credit, gate');
    await world.stripe.customers.createBalanceTransaction(customer, { amount: -700, currency: 'jpy', metadata: { incident: 'INC-yen-gate' } });
    const terms = approvalTerms({ scope: `customer:${customer}`, capCents: 10_000 });
    await node.approvals.grant(terms);
    const answer = await node.gate.submit({ requestId: `case-${customer}`, agent: 'support-bot', approval: terms.id, premises: { incident_compensation: 0 }, effect: credit(customer, 'INC-yen-gate') });
    expect(answer.outcome, JSON.stringify(answer)).toBe('REFUSED:target_error');
    expect(await credits(customer)).toHaveLength(0);
  });

  it('one billing took back in the same currency, or a debit alone there, refuses nothing', async () => {
    const customer = await usdCustomerWithJpyInvoice('usd, jpy credit taken back');
    await world.stripe.customers.createBalanceTransaction(customer, { amount: -700, currency: 'jpy', metadata: { incident: 'INC-yen-back' } });
    await world.stripe.customers.createBalanceTransaction(customer, { amount: 700, currency: 'jpy', metadata: { incident: 'INC-yen-back' } });
    const landed = await target.apply(effectIdFor('taken back'), credit(customer, 'INC-yen-back'), sendContext(2_000, { attempt: null }));
    expect(landed).toMatchObject({ amount: -500, currency: 'usd' });

    const debited = await usdCustomerWithJpyInvoice('usd, jpy debit');
    await world.stripe.customers.createBalanceTransaction(debited, { amount: 700, currency: 'jpy', metadata: { incident: 'INC-yen-debit' } });
    expect(await target.apply(effectIdFor('debit'), credit(debited, 'INC-yen-debit'), sendContext(2_000, { attempt: null }))).toMatchObject({ amount: -500 });
  });
});
