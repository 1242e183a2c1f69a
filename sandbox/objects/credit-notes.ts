// Credit notes (stripe-facts §8.4; scenarios.md §3.3, §3.7): issued against a finalized invoice for an `amount`
// or `lines[]`. The part the invoice still owes is `pre_payment_amount` and lowers `amount_due`; the rest is
// `post_payment_amount`, which `credit_amount` (to the customer balance in the invoice's currency, as a `credit_note`
// balance transaction), `refund_amount` (a refund of the invoice's payment) and `out_of_band_amount` must add up to
// exactly.
//   issued ──void──▶ void        (a voided note's balance credit is taken back)
import { snapshot } from '../core/diff.js';
import { invalidRequest, requireObject } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { listParams, paginate, requireFilterIds } from '../core/list.js';
import { formatAmount } from '../core/money.js';
import { accepted, arrayOf, int, mergeMetadata, metadata, object, oneOf, required, str } from '../core/params.js';
import { route } from '../http/router.js';
import type { Core } from '../core/core.js';
import type { EventOrigin } from '../core/event-bus.js';
import type { Parsed } from '../core/params.js';
import type { StripeObject } from '../core/store.js';
import type { Route } from '../http/router.js';
import type { Customers } from './customers.js';
import type { Invoice, Invoices } from './invoices.js';
import type { Refunds } from './refunds.js';

export const creditNoteReasons = ['duplicate', 'fraudulent', 'order_change', 'product_unsatisfactory'] as const;
export type CreditNoteReason = (typeof creditNoteReasons)[number];

export const creditNoteLineTypes = ['invoice_line_item', 'custom_line_item'] as const;
export type CreditNoteLineType = (typeof creditNoteLineTypes)[number];

export interface CreditNoteLine {
  id: string;
  object: 'credit_note_line_item';
  amount: number;
  description: string | null;
  discount_amount: number;
  discount_amounts: never[];
  invoice_line_item?: string;
  livemode: false;
  metadata: Record<string, string>;
  pretax_credit_amounts: never[];
  quantity: number | null;
  tax_rates: never[];
  taxes: never[];
  type: CreditNoteLineType;
  unit_amount: number | null;
  unit_amount_decimal: string | null;
}

export interface CreditNote extends StripeObject {
  object: 'credit_note';
  amount: number;
  amount_shipping: number;
  currency: string;
  customer: string;
  customer_account: null;
  customer_balance_transaction: string | null;
  discount_amount: number;
  discount_amounts: never[];
  effective_at: number | null;
  invoice: string;
  lines: { object: 'list'; data: CreditNoteLine[]; has_more: false; url: string };
  livemode: false;
  memo: string | null;
  metadata: Record<string, string>;
  number: string;
  out_of_band_amount: number | null;
  pdf: string;
  post_payment_amount: number;
  pre_payment_amount: number;
  pretax_credit_amounts: never[];
  reason: CreditNoteReason | null;
  refunds: Array<{ amount_refunded: number; payment_record_refund: null; refund: string; type: 'refund' }>;
  shipping_cost: null;
  status: 'issued' | 'void';
  subtotal: number;
  subtotal_excluding_tax: number;
  total: number;
  total_excluding_tax: number;
  total_taxes: never[];
  type: 'pre_payment' | 'post_payment';
  voided_at: number | null;
}

const lineParam = object({
  type: required(oneOf(creditNoteLineTypes)),
  invoice_line_item: str(),
  amount: int({ min: 0 }),
  quantity: int({ min: 1 }),
  unit_amount: int({ min: 0 }),
  description: str(),
  tax_rates: accepted(),
});

const createParams = {
  invoice: required(str()),
  amount: int({ min: 1 }),
  lines: arrayOf(lineParam),
  credit_amount: int({ min: 0 }),
  refund_amount: int({ min: 0 }),
  out_of_band_amount: int({ min: 0 }),
  memo: str(),
  metadata: metadata(),
  reason: oneOf(creditNoteReasons),
  email_type: oneOf(['credit_note', 'none']),
  effective_at: int({ min: 0 }),
};
type CreateParams = Parsed<typeof createParams>;
type LineParams = ReturnType<typeof lineParam.parse>;

export interface CreditNotes {
  routes: Route[];
}

export function createCreditNotes(core: Core, deps: { customers: Customers; invoices: Invoices; refunds: Refunds }): CreditNotes {
  const { store, events } = core;
  const { customers, invoices, refunds } = deps;
  const collection = store.collection<CreditNote>('credit_note');

  const require = (id: string): CreditNote => requireObject(collection, 'credit_note', id);

  const lineOf = (invoice: Invoice, line: LineParams, index: number): CreditNoteLine => {
    const common = { id: newId('cnli'), object: 'credit_note_line_item' as const, discount_amount: 0, discount_amounts: [], livemode: false as const, metadata: {}, pretax_credit_amounts: [], tax_rates: [], taxes: [] };
    if (line.type === 'custom_line_item') {
      const quantity = line.quantity ?? 1;
      const unit = line.unit_amount ?? 0;
      return { ...common, amount: unit * quantity, description: line.description ?? null, quantity, type: 'custom_line_item', unit_amount: unit, unit_amount_decimal: String(unit) };
    }
    const source = invoice.lines.data.find((l) => l.id === line.invoice_line_item);
    if (source === undefined) {
      throw invalidRequest(`No such invoice line item: '${line.invoice_line_item ?? ''}'`, { code: 'resource_missing', param: `lines[${index}][invoice_line_item]` }, 404);
    }
    const amount = line.amount ?? (line.quantity === undefined ? source.amount : Math.round((source.amount / source.quantity) * line.quantity));
    return { ...common, amount, description: source.description, invoice_line_item: source.id, quantity: line.quantity ?? source.quantity, type: 'invoice_line_item', unit_amount: null, unit_amount_decimal: null };
  };

  const creditedSoFar = (invoice: Invoice): number => invoice.pre_payment_credit_notes_amount + invoice.post_payment_credit_notes_amount;

  const create = (params: CreateParams, origin: EventOrigin): CreditNote => {
    const invoice = invoices.require(params.invoice);
    if (invoice.status !== 'open' && invoice.status !== 'paid') {
      throw invalidRequest(`Invoice ${invoice.id} is ${invoice.status}; credit notes can only be issued for finalized invoices.`, { param: 'invoice' });
    }
    const lines = (params.lines ?? []).map((line, index) => lineOf(invoice, line, index));
    const amount = params.amount ?? lines.reduce((sum, line) => sum + line.amount, 0);
    const creditable = invoice.total - creditedSoFar(invoice);
    if (amount > creditable) {
      throw invalidRequest(
        `The credit note amount (${formatAmount(amount, invoice.currency)}) is greater than the amount that can still be credited on invoice ${invoice.id} (${formatAmount(creditable, invoice.currency)}).`,
        { param: 'amount' },
      );
    }
    const pre = invoice.status === 'open' ? Math.min(amount, invoice.amount_remaining) : 0;
    const post = amount - pre;
    const credit = params.credit_amount ?? 0;
    const refund = params.refund_amount ?? 0;
    const outOfBand = params.out_of_band_amount ?? 0;
    if (credit + refund + outOfBand !== post) {
      throw invalidRequest(
        `The sum of credit_amount, refund_amount and out_of_band_amount (${formatAmount(credit + refund + outOfBand, invoice.currency)}) must equal the credit note's post-payment amount (${formatAmount(post, invoice.currency)}).`,
      );
    }
    const paymentIntent = invoices.paymentIntentOf(invoice);
    if (refund > 0 && paymentIntent === null) throw invalidRequest(`Invoice ${invoice.id} has no payment to refund.`, { param: 'refund_amount' });

    const customer = customers.require(invoice.customer);
    const now = customers.nowFor(customer);
    const id = newId('cn');
    const sequence = collection.newestFirst().filter((n) => n.invoice === invoice.id).length + 1;
    const note = collection.insert({
      id,
      object: 'credit_note',
      amount,
      amount_shipping: 0,
      created: now,
      currency: invoice.currency,
      customer: customer.id,
      customer_account: null,
      customer_balance_transaction: null,
      discount_amount: 0,
      discount_amounts: [],
      effective_at: params.effective_at ?? now,
      invoice: invoice.id,
      lines: { object: 'list', data: lines, has_more: false, url: `/v1/credit_notes/${id}/lines` },
      livemode: false,
      memo: params.memo ?? null,
      metadata: mergeMetadata({}, params.metadata),
      number: `${invoice.number ?? invoice.id}-CN-${String(sequence).padStart(2, '0')}`,
      out_of_band_amount: params.out_of_band_amount ?? null,
      pdf: `https://pay.stripe.com/credit_notes/${id}/pdf`,
      post_payment_amount: post,
      pre_payment_amount: pre,
      pretax_credit_amounts: [],
      reason: params.reason ?? null,
      refunds: [],
      shipping_cost: null,
      status: 'issued',
      subtotal: amount,
      subtotal_excluding_tax: amount,
      total: amount,
      total_excluding_tax: amount,
      total_taxes: [],
      type: post > 0 ? 'post_payment' : 'pre_payment',
      voided_at: null,
    });
    if (refund > 0 && paymentIntent !== null) {
      const made = refunds.create({ payment_intent: paymentIntent, amount: refund }, origin);
      note.refunds.push({ amount_refunded: refund, payment_record_refund: null, refund: made.id, type: 'refund' });
    }
    if (credit > 0) {
      const change = { amount: -credit, currency: invoice.currency, type: 'credit_note' as const, invoice: invoice.id, creditNote: note.id };
      note.customer_balance_transaction = customers.changeBalance(customer, change, origin).id;
    }
    invoices.update(
      invoice,
      (i) => {
        i.pre_payment_credit_notes_amount += pre;
        i.post_payment_credit_notes_amount += post;
        i.amount_due -= pre;
        i.amount_remaining -= pre;
      },
      origin,
    );
    events.emit('credit_note.created', note, origin);
    return note;
  };

  const voidNote = (note: CreditNote, origin: EventOrigin): CreditNote => {
    if (note.status === 'void') throw invalidRequest(`Credit note ${note.id} has already been voided.`);
    const invoice = invoices.require(note.invoice);
    const customer = customers.require(note.customer);
    const before = snapshot(note);
    note.status = 'void';
    note.voided_at = customers.nowFor(customer);
    const credited = note.post_payment_amount - (note.out_of_band_amount ?? 0) - note.refunds.reduce((sum, r) => sum + r.amount_refunded, 0);
    if (credited > 0) customers.changeBalance(customer, { amount: credited, currency: note.currency, type: 'credit_note', invoice: invoice.id, creditNote: note.id }, origin);
    invoices.update(
      invoice,
      (i) => {
        i.pre_payment_credit_notes_amount -= note.pre_payment_amount;
        i.post_payment_credit_notes_amount -= note.post_payment_amount;
        i.amount_due += note.pre_payment_amount;
        i.amount_remaining += note.pre_payment_amount;
      },
      origin,
    );
    events.emit('credit_note.voided', note, origin, { before });
    return note;
  };

  const routes = [
    route({
      method: 'POST',
      path: '/v1/credit_notes',
      params: createParams,
      check: (params) => {
        if (params.amount === undefined && params.lines === undefined) throw invalidRequest('Must provide one of amount, lines, or shipping_cost.');
      },
      handle: (params, _path, ctx) => create(params, ctx.origin),
    }),
    route({ method: 'GET', path: '/v1/credit_notes/:id', params: {}, handle: (_params, path) => require(path['id'] ?? '') }),
    route({
      method: 'POST',
      path: '/v1/credit_notes/:id',
      params: { memo: str(), metadata: metadata() },
      handle: (params, path, ctx) => {
        const note = require(path['id'] ?? '');
        const before = snapshot(note);
        note.metadata = mergeMetadata(note.metadata, params.metadata);
        if (params.memo !== undefined) note.memo = params.memo;
        events.emit('credit_note.updated', note, ctx.origin, { before });
        return note;
      },
    }),
    route({ method: 'POST', path: '/v1/credit_notes/:id/void', params: {}, handle: (_params, path, ctx) => voidNote(require(path['id'] ?? ''), ctx.origin) }),
    route({
      method: 'GET',
      path: '/v1/credit_notes',
      params: { ...listParams, customer: str(), invoice: str() },
      handle: (params) => {
        requireFilterIds(store, { customer: params.customer, invoice: params.invoice });
        const found = collection
          .newestFirst()
          .filter((n) => (params.customer === undefined || n.customer === params.customer) && (params.invoice === undefined || n.invoice === params.invoice));
        return paginate(found, params, '/v1/credit_notes');
      },
    }),
    route({
      method: 'GET',
      path: '/v1/credit_notes/:id/lines',
      params: {},
      handle: (_params, path) => require(path['id'] ?? '').lines,
    }),
  ];

  return { routes };
}
