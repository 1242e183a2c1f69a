// Rule (DESIGN §3 F, §8; facts/apply.ts applyCredits, core/final-money.ts, core/alert-rules.ts): a credit's receipt
// agrees with the money at Stripe. The credit target refuses a credit in another currency than the customer is billed
// in, but it can only check before the send: billing may set the customer's currency (its first invoice) after the
// gate's pre-send read, while the credit is on its way. Stripe then keeps the credit in a balance of its own that the
// customer's invoices never use. The facts record the credit's currency and the customer's, so the receipt stops
// saying the credit reached the customer (final money not_returned, `currency_mismatch`) and an alert says what
// happened and what to do; taking the credit back with a debit labelled as the alert says resolves it.
import type Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import type { Target } from '../../src/interlock.js';
import { sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

/** Runs `act` once, right after the gate's pre-send premise read of a credit for `customer` (before its POST). */
function afterPreSendRead(customer: string, act: () => Promise<void>): () => void {
  const target: Target = rig.target;
  const read = target.readFacts.bind(target);
  let done = false;
  target.readFacts = async (effectId, effect, names, context) => {
    const facts = await read(effectId, effect, names, context);
    if (!done && context.premiseCheck === true && effect.kind === 'credit' && effect.customer === customer) {
      done = true;
      await act();
    }
    return facts;
  };
  return () => {
    target.readFacts = read;
  };
}

/**
 * A $20 usd credit for a new customer (no currency yet at the gate's pre-send read, so it passes) whom billing
 * invoices in eur for the first time before the credit's POST reaches Stripe; its facts read once it landed.
 */
async function usdCreditForEurCustomer(email: string, incident: string): Promise<{ customer: Stripe.Customer; effectId: string }> {
  const customer = await rig.stripe.customers.create({ email });
  const restore = afterPreSendRead(customer.id, async () => {
    await rig.stripe.invoiceItems.create({ customer: customer.id, amount: 5_000, currency: 'eur' });
    const invoice = await rig.stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: 'include' });
    await rig.stripe.invoices.finalizeInvoice(invoice.id ?? '');
  });
  let effectId: string;
  try {
    effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 2_000, incident });
  } finally {
    restore();
  }
  await settled();
  await rig.facts.reread(effectId);
  await settled();
  return { customer, effectId };
}

describe('a credit whose customer comes to be billed in another currency while it is sent', () => {
  it('the receipt answers not_returned (currency_mismatch) with an alert, and a debit labelled as the alert says resolves it', async () => {
    const { customer, effectId } = await usdCreditForEurCustomer('new-subscriber@example.com', 'inc_currency_1');
    // The world: billed in eur, the credit in a usd balance no eur invoice uses.
    const now = (await rig.stripe.customers.retrieve(customer.id)) as Stripe.Customer;
    const credits = (await rig.stripe.customers.listBalanceTransactions(customer.id)).data.filter((txn) => txn.type === 'adjustment');
    expect({ currency: now.currency, balance: now.balance, credits: credits.map((txn) => [txn.amount, txn.currency]) }).toEqual({ currency: 'eur', balance: 0, credits: [[-2_000, 'usd']] });
    const credit = credits[0]?.id ?? '';

    const verification = await rig.receipt(effectId);
    expect(verification).toMatchObject({
      valid: true,
      outcome: 'COMMITTED',
      answer: 'returned',
      finalMoney: { status: 'not_returned', failureReason: 'currency_mismatch', currencyMismatch: { credit, cents: 2_000, currency: 'usd', customerCurrency: 'eur' } },
      answerMatchesFinalMoney: false,
    });
    const alert = await rig.stores.alerts.get(`failed_after_landed:${effectId}`);
    expect(alert).toMatchObject({ kind: 'failed_after_landed', centsAtStake: 2_000, refund: credit, resolvedAt: null });
    expect(alert?.sentence).toMatch(/landed in usd, but the customer is billed in eur/);
    expect(alert?.action).toContain(`metadata[interlock_effect_id]=${effectId}`);
    expect(alert?.action).toContain('currency=usd');

    // Taken back as the action says: the usd credit is gone, and nothing about it is left to act on.
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 2_000, currency: 'usd', metadata: { interlock_effect_id: effectId } });
    await settled();
    await rig.facts.reread(effectId);
    await settled();
    expect((await rig.receipt(effectId)).finalMoney).toMatchObject({ status: 'not_returned', failureReason: null });
    expect(await rig.stores.alerts.get(`failed_after_landed:${effectId}`)).toMatchObject({ resolvedBy: 'facts', resolvedAt: expect.any(Number) });
  });

  it('a debit in another currency than the credit takes none of it back', async () => {
    const customer = await rig.stripe.customers.create({ email: 'other-currency-debit@example.com' });
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident: 'inc_currency_2' });
    await settled();
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 500, currency: 'eur', metadata: { interlock_effect_id: effectId } });
    await settled();
    await rig.facts.reread(effectId);
    await settled();
    expect(await rig.receipt(effectId)).toMatchObject({ valid: true, finalMoney: { status: 'returned' }, answerMatchesFinalMoney: true });
  });
});

// an alert's action, done exactly as
// written, moves the money to where it should be and no further. The currency_mismatch alert (failed_after_landed on a
// credit that landed in another currency than the customer is billed in) asks for a labelled debit taking the credit
// back. Once part of it was taken back, the debit it asks for, and the cents at stake, are what is left of the credit:
// asking for the whole credit again would have the operator over-debit the customer, who would then owe the excess in
// the credit's currency.
describe('the currency_mismatch alert after a partial take-back', () => {
  it('asks for what is left of the credit, not the whole credit again, and doing that resolves it', async () => {
    const { customer, effectId } = await usdCreditForEurCustomer('mismatch-partly-taken-back@example.com', 'inc_mismatch_partly');
    expect(((await rig.stripe.customers.retrieve(customer.id)) as Stripe.Customer).currency).toBe('eur');
    expect(await rig.stores.alerts.get(`failed_after_landed:${effectId}`)).toMatchObject({ centsAtStake: 2_000, resolvedAt: null });

    // The operator takes back $5 of the $20 usd credit first, labelled as the alert says.
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 500, currency: 'usd', metadata: { interlock_effect_id: effectId } });
    await settled();
    await rig.facts.reread(effectId);
    await settled();

    // $15 is left in the usd balance: that is what is at stake and what the action asks for.
    expect((await rig.receipt(effectId)).finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'currency_mismatch', currencyMismatch: { cents: 1_500, creditCents: 2_000 } });
    const alert = await rig.stores.alerts.get(`failed_after_landed:${effectId}`);
    expect({ resolvedAt: alert?.resolvedAt, centsAtStake: alert?.centsAtStake, asksWholeCredit: alert?.action.includes('amount=2000'), asksLeft: alert?.action.includes('amount=1500') }).toEqual({
      resolvedAt: null,
      centsAtStake: 1_500,
      asksWholeCredit: false,
      asksLeft: true,
    });

    // Done as it now says: the usd balance is back at nothing, and the alert resolves itself.
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 1_500, currency: 'usd', metadata: { interlock_effect_id: effectId } });
    await settled();
    await rig.facts.reread(effectId);
    await settled();
    const usd = (await rig.stripe.customers.listBalanceTransactions(customer.id)).data.filter((txn) => txn.currency === 'usd').reduce((sum, txn) => sum + txn.amount, 0);
    expect(usd).toBe(0);
    expect((await rig.receipt(effectId)).finalMoney).toMatchObject({ status: 'not_returned', failureReason: null });
    expect(await rig.stores.alerts.get(`failed_after_landed:${effectId}`)).toMatchObject({ resolvedBy: 'facts', resolvedAt: expect.any(Number) });
  });
});
