// Post-send facts for customer credits (issue 10 §2): Stripe has no balance-transaction event, so the credit the
// gate posted is seen through `customer.updated` (a re-read of the customer's balance transactions finds it by the
// effect id in its metadata); credit notes for the same incident (a second compensation) are recorded on the credit
// effect as they are issued and voided; a credit note for another incident, and a balance the next invoice
// consumes, add nothing. A note for the incident of a credit that landed raises a `compensated_twice` alert, which
// resolves itself when the note is voided. Each fact once, from webhooks, and the reconciler finds the same with webhooks dropped.
import { describe, expect, it } from 'vitest';
import { sharedFactsRig } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

const kindsOf = async (effectId: string) => ((await rig.stores.journal.receipt(effectId))?.entries ?? []).map((entry) => entry.kind);

/** An open invoice of $30 for the customer, to hang credit notes on. */
async function openInvoice(customer: string) {
  await rig.stripe.invoiceItems.create({ customer, amount: 3_000, currency: 'usd' });
  const draft = await rig.stripe.invoices.create({ customer, pending_invoice_items_behavior: 'include' });
  return rig.stripe.invoices.finalizeInvoice(draft.id ?? '');
}

describe('credit facts', () => {
  it('records the credit as Stripe announces it, and the incident\'s credit notes as they are issued and voided; nothing else', async () => {
    const customer = await rig.stripe.customers.create({ email: 'ada@example.com' });
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident: 'inc_outage_7' });
    await settled();
    const credited = await rig.observed(effectId);
    expect(credited).toEqual([{ source: 'webhook', eventId: expect.stringMatching(/^evt_/), eventType: 'customer.updated', objectId: expect.stringMatching(/^cbtxn_/), status: 'credited' }]);

    // The next invoice consumes the balance (another customer.updated): the credit itself did not change.
    const invoice = await openInvoice(customer.id);
    const other = await rig.stripe.creditNotes.create({ invoice: invoice.id ?? '', amount: 300, metadata: { incident: 'inc_other' } });
    const same = await rig.stripe.creditNotes.create({ invoice: invoice.id ?? '', amount: 700, metadata: { incident: 'inc_outage_7' } });
    await settled();
    // Our $5.00 credit landed and billing's $7.00 note compensates the same incident: the customer was paid twice, and
    // the part paid twice is the smaller of the two. Only the incident's note counts, not the other one.
    const twice = await rig.stores.alerts.get(`compensated_twice:${effectId}`);
    expect(twice).toMatchObject({ kind: 'compensated_twice', effectId, subject: `customer:${customer.id}`, centsAtStake: 500, refund: same.id, resolvedAt: null });
    expect(twice?.sentence).toContain('inc_outage_7');
    expect((await rig.receipt(effectId)).compensatedTwice).toMatchObject({ cents: 500, ownCents: 500, notesCents: 700, creditNotes: [same.id] });
    await rig.stripe.creditNotes.voidCreditNote(same.id);
    await settled();
    // Voiding the note undoes the second compensation: the alert resolves itself.
    expect(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toMatchObject({ resolvedBy: 'facts', resolvedAt: expect.any(Number) });

    const observed = await rig.observed(effectId);
    expect(observed.filter((entry) => entry.objectId === other.id)).toEqual([]);
    // Recorded from whichever event came first (the note's balance credit is a customer.updated too), once each.
    const note = observed.filter((entry) => entry.objectId === same.id);
    expect(note.map((entry) => entry.status)).toEqual(['issued', 'void']);
    expect(note.every((entry) => entry.source === 'webhook' && ['customer.updated', 'credit_note.created', 'credit_note.voided'].includes(entry.eventType))).toBe(true);
    expect(observed.filter((entry) => entry.status === 'credited')).toHaveLength(1);
    const verification = await rig.receipt(effectId);
    expect(verification).toMatchObject({ valid: true, happened: true, finalMoney: { status: 'returned' }, answerMatchesFinalMoney: true, exposure: null, compensatedTwice: null });

    // The reconciler's re-read finds nothing the webhooks did not bring.
    expect(await rig.facts.reread(effectId)).toEqual([{ effectId, appended: 0, duplicates: 2, alerts: [] }]);
  });

  it('opens the compensated_twice alert again when billing issues another note for the incident after the first was voided', async () => {
    const customer = await rig.stripe.customers.create({ email: 'grace@example.com' });
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident: 'inc_outage_8' });
    await settled();
    const invoice = await openInvoice(customer.id);
    const first = await rig.stripe.creditNotes.create({ invoice: invoice.id ?? '', amount: 400, metadata: { incident: 'inc_outage_8' } });
    await settled();
    await rig.stripe.creditNotes.voidCreditNote(first.id);
    await settled();
    expect(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toMatchObject({ resolvedBy: 'facts' });
    // The facts closed the alert, not a person: a new note for the incident pays the customer twice again, and
    // someone must hear of it.
    const second = await rig.stripe.creditNotes.create({ invoice: invoice.id ?? '', amount: 600, metadata: { incident: 'inc_outage_8' } });
    await settled();
    expect(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toMatchObject({ centsAtStake: 500, refund: second.id, resolvedAt: null, resolvedBy: null });
    expect((await rig.stores.alerts.list({ limit: 1_000 })).map((alert) => alert.id)).toContain(`compensated_twice:${effectId}`);
  });

  it('leaves no compensated_twice alert open when the note was voided while an older read of the facts raised it', async () => {
    const customer = await rig.stripe.customers.create({ email: 'edsger@example.com' });
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident: 'inc_outage_9' });
    await settled();
    await rig.stopFactsWorker();
    try {
      const invoice = await openInvoice(customer.id);
      const note = await rig.stripe.creditNotes.create({ invoice: invoice.id ?? '', amount: 400, metadata: { incident: 'inc_outage_9' } });
      // This read records the note as issued and raises from it; before its raise is written, billing voids the
      // note and another read records the void and settles the alerts (finding none to resolve yet).
      const alerts = rig.stores.alerts;
      const raise = alerts.raise.bind(alerts);
      let voided = false;
      alerts.raise = async (alert) => {
        if (alert.kind === 'compensated_twice' && !voided) {
          voided = true;
          alerts.raise = raise;
          await rig.stripe.creditNotes.voidCreditNote(note.id);
          expect(await rig.facts.reread(effectId)).toEqual([expect.objectContaining({ effectId, appended: 1 })]);
        }
        return raise(alert);
      };
      await rig.facts.reread(effectId);
      expect(voided).toBe(true);
      expect((await rig.receipt(effectId)).compensatedTwice).toBeNull();
      const alert = await alerts.get(`compensated_twice:${effectId}`);
      expect(alert === null || alert.resolvedAt !== null).toBe(true);
    } finally {
      rig.startFactsWorker();
    }
  });

  it('resolves compensated_twice when billing re-tags its note to another incident, and opens it again when the note is tagged back', async () => {
    const customer = await rig.stripe.customers.create({ email: 'barbara@example.com' });
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident: 'inc_outage_10' });
    await settled();
    const invoice = await openInvoice(customer.id);
    const note = await rig.stripe.creditNotes.create({ invoice: invoice.id ?? '', amount: 700, metadata: { incident: 'inc_outage_10' } });
    await settled();
    expect(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toMatchObject({ refund: note.id, resolvedAt: null });
    // Billing had tagged the note with the wrong incident and fixes it: Stripe (and the credit target's own pre-send
    // check) no longer counts it for this incident, and neither does the receipt.
    await rig.stripe.creditNotes.update(note.id, { metadata: { incident: 'inc_outage_11' } });
    await settled();
    await rig.facts.reread(effectId);
    expect((await rig.receipt(effectId)).compensatedTwice).toBeNull();
    expect(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toMatchObject({ resolvedBy: 'facts', resolvedAt: expect.any(Number) });
    // Tagged back (metadata has no lifecycle): the note compensates this incident again.
    await rig.stripe.creditNotes.update(note.id, { metadata: { incident: 'inc_outage_10' } });
    await settled();
    await rig.facts.reread(effectId);
    expect((await rig.receipt(effectId)).compensatedTwice).toMatchObject({ creditNotes: [note.id] });
    expect(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toMatchObject({ refund: note.id, resolvedAt: null });
    expect((await rig.observed(effectId)).filter((entry) => entry.objectId === note.id)).toHaveLength(3);
  });

  it('raises compensated_twice when billing compensates the incident with a tagged balance credit after the credit landed', async () => {
    const customer = await rig.stripe.customers.create({ email: 'frances@example.com' });
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident: 'inc_outage_12' });
    await settled();
    // Billing's SLA automation credits the balance for the same incident: what the credit target counts as compensation.
    const adjustment = await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: -700, currency: 'usd', metadata: { incident: 'inc_outage_12' } });
    await settled();
    const verification = await rig.receipt(effectId);
    expect(verification).toMatchObject({ happened: true, finalMoney: { status: 'returned' }, compensatedTwice: { cents: 500, ownCents: 500, notesCents: 700, creditNotes: [], balanceCredits: [adjustment.id] } });
    expect(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toMatchObject({ centsAtStake: 500, refund: adjustment.id, resolvedAt: null });
    // Billing's credit is no landing of this effect's send, and is recorded once.
    expect(await kindsOf(effectId)).not.toContain('LATE_RESULT');
    expect(await rig.facts.reread(effectId)).toEqual([{ effectId, appended: 0, duplicates: 2, alerts: [`compensated_twice:${effectId}`] }]);
  });

  it('opens a compensated_twice alert a person resolved again when billing issues a further note for the incident', async () => {
    const customer = await rig.stripe.customers.create({ email: 'radia@example.com' });
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident: 'inc_outage_13' });
    await settled();
    const invoice = await openInvoice(customer.id);
    const first = await rig.stripe.creditNotes.create({ invoice: invoice.id ?? '', amount: 400, metadata: { incident: 'inc_outage_13' } });
    await settled();
    await rig.stores.alerts.resolve(`compensated_twice:${effectId}`, 'dana');
    // The same facts again change nothing of what the person decided.
    await rig.facts.reread(effectId);
    expect(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toMatchObject({ resolvedBy: 'dana' });
    // A further note pays the customer a third time: not what dana handled.
    const second = await rig.stripe.creditNotes.create({ invoice: invoice.id ?? '', amount: 600, metadata: { incident: 'inc_outage_13' } });
    await settled();
    expect(await rig.stores.alerts.get(`compensated_twice:${effectId}`)).toMatchObject({ compensations: [first.id, second.id], resolvedAt: null, resolvedBy: null });
  });

  // Rule: a credit taken back by debits labelled with its effect (the step compensated_twice offers) no longer leaves the
  // customer compensated: the final money reads not_returned once they cover it, and it is no second compensation. The
  // debits used to be dropped with a log line, and the receipt kept answering returned.
  it('a credit taken back with debits labelled with its effect reads not_returned once they cover it, and is no second compensation', async () => {
    const customer = await rig.stripe.customers.create({ email: 'reversal@example.com' });
    const incident = 'inc_outage_14';
    const effectId = await rig.commit({ kind: 'credit', customer: customer.id, amount: 500, incident });
    await settled();
    const invoice = await openInvoice(customer.id);
    await rig.stripe.creditNotes.create({ invoice: invoice.id ?? '', amount: 400, metadata: { incident } });
    await settled();
    expect(await rig.receipt(effectId)).toMatchObject({ finalMoney: { status: 'returned' }, compensatedTwice: { cents: 400 } });

    // Support takes the credit back in two debits on the balance, each labelled with the effect it reverses.
    const debit = (amount: number) => rig.stripe.customers.createBalanceTransaction(customer.id, { amount, currency: 'usd', description: 'reverse credit', metadata: { interlock_effect_id: effectId, interlock_incident: incident } });
    await debit(200);
    await rig.facts.reread(effectId);
    await settled();
    // $3 of the credit is still the customer's, beside billing's $4 note: what is paid twice is the smaller of what is
    // left of the credit and the note, $3 (it read $4 while the part taken back was not subtracted).
    expect(await rig.receipt(effectId)).toMatchObject({ finalMoney: { status: 'returned' }, compensatedTwice: { cents: 300, reversedCents: 200 } });
    await debit(300);
    await rig.facts.reread(effectId);
    await settled();
    const verification = await rig.receipt(effectId);
    expect(verification).toMatchObject({ valid: true, happened: true, answer: 'returned', finalMoney: { status: 'not_returned' }, answerMatchesFinalMoney: false, compensatedTwice: null });
    expect((await rig.stores.alerts.get(`compensated_twice:${effectId}`))?.resolvedAt).not.toBeNull();
  });
});
