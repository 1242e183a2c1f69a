// Rule: DESIGN §3 F / §8: a credit's receipt answers with the money at Stripe; a balance transaction someone else labels with the effect's id is a lead, not the effect's credit, once the effect committed its own.
// While the dispatch is open, two balance credits that name the effect with its amount cannot be told apart: none is
// recorded as its credit, the customer is marked, and the settle's re-read records the one the commit names (src/facts/
// apply.ts holdInFlight); after the commit the other is a re-credit in another currency, which moves none of the credit.
// Before, the hand-made credit was recorded as the effect's own (with its currency), and final-money.ts judged every
// "own" credit, not the one the COMMITTED names: the receipt said the gate's credit did not reach the customer
// (currency_mismatch) and the alert asked for wrong money moves.
import { describe, expect, it } from 'vitest';
import { sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

describe('a balance credit in another currency labelled by hand with the id of a credit in flight', () => {
  it("does not turn the receipt of the credit that landed in the customer's currency into not_returned (currency_mismatch)", async () => {
    const customer = await rig.stripe.customers.create({ email: 'inflight-labelled@example.com' });
    // The customer is billed in usd (a first balance move sets it), the currency the gate credits in.
    await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: 1, currency: 'usd' });
    await rig.sandbox.control.idle();
    await rig.drained();
    const target = rig.target;
    const apply = target.apply.bind(target);
    let labelled = '';
    // The gate's usd credit lands; before its answer is recorded, someone posts a eur credit of the same amount and
    // copies the effect id into its metadata (from the gate's own balance transaction in the Dashboard).
    target.apply = async (effectId, effect, context) => {
      const result = await apply(effectId, effect, context);
      labelled = (await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: -2_000, currency: 'eur', metadata: { interlock_effect_id: effectId } })).id;
      await rig.sandbox.control.idle();
      await rig.drained();
      return result;
    };
    let effectId: string;
    try {
      effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 2_000, incident: 'inc_inflight_labelled' });
    } finally {
      target.apply = apply;
    }
    await rig.sandbox.control.idle();
    await rig.drained();
    await rig.facts.reread(effectId);
    await rig.drained();
    // At Stripe: the gate's own credit is -2000 usd, in the currency the customer is billed in.
    const own = await rig.stripe.customers.retrieveBalanceTransaction(customer.id, (await rig.receipt(effectId)).evidence as string);
    expect({ amount: own.amount, currency: own.currency }).toEqual({ amount: -2_000, currency: 'usd' });
    const receipt = await rig.receipt(effectId);
    // Nothing recorded the hand-made credit as the effect's own (an own credit's fact carries the customer's currency).
    const entries = (await rig.stores.journal.receipt(effectId))?.entries ?? [];
    expect(entries.filter((entry) => entry.kind === 'OBSERVED' && entry.objectId === labelled && entry.customerCurrency !== undefined)).toEqual([]);
    // Before the fix: valid true, finalMoney { status: 'not_returned', failureReason: 'currency_mismatch', currencyMismatch.credit = the hand-made eur credit },
    // and a failed_after_landed alert telling the operator to debit 20.00 EUR and compensate the customer again in usd.
    expect(receipt.finalMoney.currencyMismatch?.credit).not.toBe(labelled);
    expect(receipt.finalMoney.status).toBe('returned');
    expect(receipt.answerMatchesFinalMoney).toBe(true);
    const alert = await rig.stores.alerts.get(`failed_after_landed:${effectId}`);
    expect(alert === null || alert.resolvedAt !== null).toBe(true);
  });
});
