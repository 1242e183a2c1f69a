// A credit note for a credit's incident that comes while the credit is in flight (dispatched, not yet settled: its
// answer was lost and so were the resends'). The note is recorded on the open effect, or on nothing when the credit is
// not at Stripe yet, and no alert is called for until the credit commits; as a dispute marks the payment of a refund
// in flight (in-flight-facts.test.ts), the note marks the customer, so the `compensated_twice` alert follows the
// commit within seconds, not at the reconciler's next pass (15 min).
import { describe, expect, it } from 'vitest';
import { sharedFactsRig, waitFor } from './facts-rig.js';

const rig = sharedFactsRig();

const kindsOf = async (effectId: string) => ((await rig.stores.journal.receipt(effectId))?.entries ?? []).map((entry) => entry.kind);

describe('credit facts that come while the credit is in flight', () => {
  it('a credit note for the incident that came while the credit was in flight raises compensated_twice seconds after the credit commits', async () => {
    const customer = await rig.stripe.customers.create({ email: 'inflight@example.com' });
    await rig.stripe.invoiceItems.create({ customer: customer.id, amount: 3_000, currency: 'usd' });
    const draft = await rig.stripe.invoices.create({ customer: customer.id, pending_invoice_items_behavior: 'include' });
    const invoice = await rig.stripe.invoices.finalizeInvoice(draft.id ?? '');
    await rig.sandbox.control.idle();
    await rig.drained();
    const incident = `inc_flight_${Date.now()}`;
    // The credit is made at Stripe but its answers are lost, and so are the resends': the dispatch stays open.
    await rig.sandbox.control.dropNext({ path: `/v1/customers/${customer.id}/balance_transactions`, method: 'POST', when: 'after', count: 100_000 });
    // Recovery's lookups are held back until the note is in, so it cannot find the credit and settle it first, however
    // soon it looks (on a busy machine it may look before the note is issued).
    const lookup = rig.target.query.bind(rig.target);
    let release: () => void = () => undefined;
    const noteIn = new Promise<void>((resolve) => {
      release = resolve;
    });
    rig.target.query = async (...args) => {
      await noteIn;
      return lookup(...args);
    };
    const effectId = await rig.submit({ kind: 'credit', customer: customer.id, amount: 500, incident });
    await waitFor('the credit to reach Stripe', async () => ((await rig.sandbox.control.requests()).some((request) => request.method === 'POST' && request.path.startsWith(`/v1/customers/${customer.id}/balance_transactions`) && request.fault === 'drop_after') ? true : null));
    const note = await rig.stripe.creditNotes.create({ invoice: invoice.id ?? '', amount: 700, metadata: { incident } });
    await rig.sandbox.control.idle();
    await waitFor('the facts worker to take the note', async () => (rig.applied.some(({ event }) => event.type === 'credit_note.created' && (event.data.object as { id?: string }).id === note.id) ? true : null));
    await rig.drained();
    expect(await kindsOf(effectId)).not.toContain('COMMITTED');

    release();
    rig.target.query = lookup;
    await rig.sandbox.control.clearFaults();
    expect((await rig.effects.waitFor(effectId, 30_000))?.outcome).toMatch(/^COMMITTED/);
    // Well inside the reconciler's interval: the settle saw the customer marked and re-read the credit's facts.
    const alert = await waitFor('the compensated_twice alert', async () => (await rig.stores.alerts.list()).find((raised) => raised.effectId === effectId && raised.kind === 'compensated_twice'), 8_000);
    expect(alert).toMatchObject({ refund: note.id, resolvedAt: null });
    expect((await rig.receipt(effectId)).compensatedTwice).toMatchObject({ creditNotes: [note.id] });
  }, 90_000);
});
