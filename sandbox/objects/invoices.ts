// Invoices and invoice items (stripe-facts §8.2–8.3). An invoice's life:
//   draft ──finalize──▶ open ──collect──▶ paid            (amount_due 0: paid without a charge)
//                         └── card declined: stays open, invoice.payment_failed
// Finalization is when the customer balance is applied: `starting_balance` is the balance then, credit consumed
// becomes an `applied_to_invoice` balance transaction, `amount_due = total - credit used`, and `ending_balance` the
// balance after. Subscription-create invoices finalize at once; renewal drafts finalize an hour after they are
// made (Stripe's auto-advance), which a test clock advance runs through. Pending invoice items (prorations) wait
// for the customer's next subscription invoice.
import { snapshot } from '../core/diff.js';
import { automatic } from '../core/event-bus.js';
import { requireObject, SandboxError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { listParams, paginate } from '../core/list.js';
import { bool, mergeMetadata, metadata, oneOf, str } from '../core/params.js';
import { route } from '../http/router.js';
import type { Core } from '../core/core.js';
import type { EventOrigin } from '../core/event-bus.js';
import type { Collection, StripeObject } from '../core/store.js';
import type { Route } from '../http/router.js';
import type { Price } from './catalog.js';
import type { Customer, Customers } from './customers.js';
import type { PaymentIntents } from './payment-intents.js';
import type { TestClock } from './test-clocks.js';

export const invoiceStatuses = ['draft', 'open', 'paid', 'uncollectible', 'void'] as const;
export type InvoiceStatus = (typeof invoiceStatuses)[number];

export const billingReasons = ['subscription_create', 'subscription_cycle', 'subscription_update', 'manual'] as const;
export type BillingReason = (typeof billingReasons)[number];

/** Stripe's draft auto-advance for subscription invoices: finalized about an hour after creation. */
const AUTO_FINALIZE_SECONDS = 3600;

export interface Period {
  start: number;
  end: number;
}

interface PriceDetails {
  price_details: { price: string; product: string };
  type: 'price_details';
  unit_amount_decimal: string;
}

export interface SubscriptionItemParent {
  invoice_item_details: null;
  subscription_item_details: {
    invoice_item: string | null;
    proration: boolean;
    proration_details: { credited_items: null };
    subscription: string;
    subscription_item: string;
  };
  type: 'subscription_item_details';
}

export interface InvoiceLine {
  id: string;
  object: 'line_item';
  amount: number;
  currency: string;
  description: string;
  discount_amounts: never[];
  discountable: boolean;
  discounts: never[];
  invoice: string;
  livemode: false;
  metadata: Record<string, string>;
  parent: SubscriptionItemParent;
  period: Period;
  pretax_credit_amounts: never[];
  pricing: PriceDetails;
  quantity: number;
  subtotal: number;
  taxes: never[];
}

export interface InvoiceItem extends StripeObject {
  object: 'invoiceitem';
  amount: number;
  currency: string;
  customer: string;
  customer_account: null;
  date: number;
  description: string;
  discountable: boolean;
  discounts: never[];
  invoice: string | null;
  livemode: false;
  metadata: Record<string, string>;
  parent: { subscription_details: { subscription: string; subscription_item: string }; type: 'subscription_details' };
  period: Period;
  pricing: PriceDetails;
  proration: boolean;
  quantity: number;
  tax_rates: never[];
  test_clock: string | null;
}

export interface Invoice extends StripeObject {
  object: 'invoice';
  account_country: 'US';
  account_name: string;
  amount_due: number;
  amount_overpaid: number;
  amount_paid: number;
  amount_remaining: number;
  amount_shipping: number;
  attempt_count: number;
  attempted: boolean;
  auto_advance: boolean;
  automatically_finalizes_at: number | null;
  billing_reason: BillingReason;
  collection_method: 'charge_automatically';
  currency: string;
  customer: string;
  customer_account: null;
  customer_email: string | null;
  customer_name: string | null;
  default_payment_method: string | null;
  description: string | null;
  discounts: never[];
  due_date: null;
  effective_at: number | null;
  ending_balance: number | null;
  hosted_invoice_url: null;
  invoice_pdf: null;
  issuer: { type: 'self' };
  last_finalization_error: null;
  lines: { object: 'list'; data: InvoiceLine[]; has_more: false; url: string };
  livemode: false;
  metadata: Record<string, string>;
  next_payment_attempt: number | null;
  number: string | null;
  parent: { quote_details: null; subscription_details: { metadata: Record<string, string>; subscription: string }; type: 'subscription_details' };
  period_end: number;
  period_start: number;
  post_payment_credit_notes_amount: number;
  pre_payment_credit_notes_amount: number;
  receipt_number: null;
  starting_balance: number;
  status: InvoiceStatus;
  status_transitions: { finalized_at: number | null; marked_uncollectible_at: null; paid_at: number | null; voided_at: null };
  subtotal: number;
  subtotal_excluding_tax: number;
  test_clock: string | null;
  total: number;
  total_discount_amounts: never[];
  total_excluding_tax: number;
  total_pretax_credit_amounts: never[];
  total_taxes: never[];
  webhooks_delivered_at: number | null;
}

/** One priced line of a subscription: its regular charge or a proration. */
export interface ChargeLine {
  amount: number;
  description: string;
  period: Period;
  price: Price;
  quantity: number;
  subscription: string;
  subscriptionItem: string;
  proration: boolean;
}

export interface SubscriptionInvoice {
  customer: Customer;
  subscription: { id: string; metadata: Record<string, string>; default_payment_method: string | null };
  billingReason: BillingReason;
  /** The period the invoice reports in `period_start`/`period_end` (the one just ended, for renewals). */
  period: Period;
  lines: ChargeLine[];
  /** Renewal drafts wait for auto-advance; invoices made by a request finalize and collect at once. */
  finalizeNow: boolean;
  /** When the invoice is made: the customer's present, or the period end a test clock advanced through. */
  at: number;
}

export interface Invoices {
  readonly collection: Collection<Invoice>;
  require(id: string, param?: string): Invoice;
  addPendingItem(customer: Customer, line: ChargeLine, origin: EventOrigin): InvoiceItem;
  /** Creates a subscription invoice with the customer's pending items, finalizing it now or on auto-advance. */
  invoiceSubscription(input: SubscriptionInvoice, origin: EventOrigin): Invoice;
  /** The PaymentIntent that paid an invoice, if a charge was needed. */
  paymentIntentOf(invoice: Invoice): string | null;
  /** Announces a change made by another family (credit notes) with `invoice.updated`. */
  update(invoice: Invoice, change: (invoice: Invoice) => void, origin: EventOrigin): void;
  /** Test clock step: finalizes and collects every draft of the clock's customers that is due by `until`. */
  finalizeDue(clock: TestClock, until: number): void;
  routes: Route[];
}

export function createInvoices(core: Core, deps: { customers: Customers; paymentIntents: PaymentIntents }): Invoices {
  const { store, events } = core;
  const { customers, paymentIntents } = deps;
  const collection = store.collection<Invoice>('invoice');
  const items = store.collection<InvoiceItem>('invoiceitem');
  const payments = store.sideTable<string>('invoice.payment_intent');

  const require = (id: string, param = 'invoice'): Invoice => requireObject(collection, 'invoice', id, param);

  const pricing = (price: Price): PriceDetails => ({ price_details: { price: price.id, product: price.product }, type: 'price_details', unit_amount_decimal: price.unit_amount_decimal });

  const addPendingItem = (customer: Customer, line: ChargeLine, origin: EventOrigin): InvoiceItem => {
    const item = items.insert({
      id: newId('ii'),
      object: 'invoiceitem',
      amount: line.amount,
      created: customers.nowFor(customer),
      currency: line.price.currency,
      customer: customer.id,
      customer_account: null,
      date: customers.nowFor(customer),
      description: line.description,
      discountable: !line.proration,
      discounts: [],
      invoice: null,
      livemode: false,
      metadata: {},
      parent: { subscription_details: { subscription: line.subscription, subscription_item: line.subscriptionItem }, type: 'subscription_details' },
      period: line.period,
      pricing: pricing(line.price),
      proration: line.proration,
      quantity: line.quantity,
      tax_rates: [],
      test_clock: customer.test_clock,
    });
    events.emit('invoiceitem.created', item, origin);
    return item;
  };

  /** What a line copies from the charge or pending item behind it. */
  type LineSource = Pick<InvoiceLine, 'amount' | 'currency' | 'description' | 'period' | 'pricing' | 'quantity'> & {
    subscription: string;
    subscriptionItem: string;
    proration: boolean;
    invoiceItem: string | null;
  };

  const lineFor = (invoiceId: string, source: LineSource): InvoiceLine => ({
    id: newId('il'),
    object: 'line_item',
    amount: source.amount,
    currency: source.currency,
    description: source.description,
    discount_amounts: [],
    discountable: !source.proration,
    discounts: [],
    invoice: invoiceId,
    livemode: false,
    metadata: {},
    parent: {
      invoice_item_details: null,
      subscription_item_details: {
        invoice_item: source.invoiceItem,
        proration: source.proration,
        proration_details: { credited_items: null },
        subscription: source.subscription,
        subscription_item: source.subscriptionItem,
      },
      type: 'subscription_item_details',
    },
    period: source.period,
    pretax_credit_amounts: [],
    pricing: source.pricing,
    quantity: source.quantity,
    subtotal: source.amount,
    taxes: [],
  });

  const fromCharge = (line: ChargeLine): LineSource => ({ ...line, currency: line.price.currency, pricing: pricing(line.price), invoiceItem: null });
  const fromItem = (item: InvoiceItem): LineSource => ({
    ...item,
    subscription: item.parent.subscription_details.subscription,
    subscriptionItem: item.parent.subscription_details.subscription_item,
    invoiceItem: item.id,
  });

  const markPaid = (invoice: Invoice, at: number, origin: EventOrigin): void => {
    const before = snapshot(invoice);
    invoice.status = 'paid';
    invoice.attempted = true;
    invoice.amount_paid = invoice.amount_due;
    invoice.amount_remaining = 0;
    invoice.next_payment_attempt = null;
    invoice.status_transitions.paid_at = at;
    events.emit('invoice.paid', invoice, origin, { before });
    events.emit('invoice.payment_succeeded', invoice, origin, { before });
  };

  const collect = (invoice: Invoice, customer: Customer, at: number, origin: EventOrigin): void => {
    if (invoice.amount_due === 0) {
      markPaid(invoice, at, origin);
      return;
    }
    const before = snapshot(invoice);
    invoice.attempt_count += 1;
    invoice.attempted = true;
    const method = invoice.default_payment_method ?? customer.invoice_settings.default_payment_method;
    if (method !== null) {
      try {
        const intent = paymentIntents.collect(
          { amount: invoice.amount_due, currency: invoice.currency, customer: customer.id, paymentMethod: method, description: invoice.billing_reason === 'subscription_create' ? 'Subscription creation' : 'Subscription update' },
          origin,
        );
        payments.set(invoice.id, intent.id);
        markPaid(invoice, at, origin);
        return;
      } catch (error) {
        // Only a decline is a payment outcome; anything else is a sandbox fault and must surface.
        if (!(error instanceof SandboxError) || error.status !== 402) throw error;
      }
    }
    events.emit('invoice.payment_failed', invoice, origin, { before });
  };

  /** Applies the customer balance (stripe-facts §8.2), then collects. */
  const finalize = (invoice: Invoice, at: number, origin: EventOrigin): void => {
    const customer = customers.require(invoice.customer);
    const before = snapshot(invoice);
    const balance = customer.balance;
    // Credit is consumed up to the total; a debit is added; a negative total is itself credit for the customer.
    const delta = invoice.total < 0 ? invoice.total : balance < 0 ? Math.min(-balance, invoice.total) : -balance;
    invoice.starting_balance = balance;
    if (delta !== 0) {
      customers.changeBalance(customer, { amount: delta, currency: invoice.currency, type: 'applied_to_invoice', invoice: invoice.id }, origin);
    }
    invoice.ending_balance = customer.balance;
    invoice.amount_due = invoice.total < 0 ? 0 : invoice.total - delta;
    invoice.amount_remaining = invoice.amount_due;
    invoice.status = 'open';
    invoice.number = customers.takeInvoiceNumber(customer);
    invoice.effective_at = at;
    invoice.automatically_finalizes_at = null;
    invoice.status_transitions.finalized_at = at;
    invoice.webhooks_delivered_at = at;
    events.emit('invoice.finalized', invoice, origin, { before });
    collect(invoice, customer, at, origin);
  };

  const invoiceSubscription = (input: SubscriptionInvoice, origin: EventOrigin): Invoice => {
    const { customer, subscription, at: now } = input;
    const id = newId('in');
    const pending = items.newestFirst().reverse().filter((item) => item.customer === customer.id && item.invoice === null);
    const lines = [...input.lines.map((line) => lineFor(id, fromCharge(line))), ...pending.map((item) => lineFor(id, fromItem(item)))];
    const total = lines.reduce((sum, line) => sum + line.amount, 0);
    const currency = input.lines[0]?.price.currency ?? customer.currency ?? 'usd';
    const invoice = collection.insert({
      id,
      object: 'invoice',
      account_country: 'US',
      account_name: 'Interlock sandbox',
      amount_due: total,
      amount_overpaid: 0,
      amount_paid: 0,
      amount_remaining: total,
      amount_shipping: 0,
      attempt_count: 0,
      attempted: false,
      auto_advance: true,
      automatically_finalizes_at: input.finalizeNow ? null : now + AUTO_FINALIZE_SECONDS,
      billing_reason: input.billingReason,
      collection_method: 'charge_automatically',
      created: now,
      currency,
      customer: customer.id,
      customer_account: null,
      customer_email: customer.email,
      customer_name: customer.name,
      default_payment_method: subscription.default_payment_method,
      description: null,
      discounts: [],
      due_date: null,
      effective_at: null,
      ending_balance: null,
      hosted_invoice_url: null,
      invoice_pdf: null,
      issuer: { type: 'self' },
      last_finalization_error: null,
      lines: { object: 'list', data: lines, has_more: false, url: `/v1/invoices/${id}/lines` },
      livemode: false,
      metadata: {},
      next_payment_attempt: null,
      number: null,
      parent: { quote_details: null, subscription_details: { metadata: { ...subscription.metadata }, subscription: subscription.id }, type: 'subscription_details' },
      period_end: input.period.end,
      period_start: input.period.start,
      post_payment_credit_notes_amount: 0,
      pre_payment_credit_notes_amount: 0,
      receipt_number: null,
      starting_balance: customer.balance,
      status: 'draft',
      status_transitions: { finalized_at: null, marked_uncollectible_at: null, paid_at: null, voided_at: null },
      subtotal: total,
      subtotal_excluding_tax: total,
      test_clock: customer.test_clock,
      total,
      total_discount_amounts: [],
      total_excluding_tax: total,
      total_pretax_credit_amounts: [],
      total_taxes: [],
      webhooks_delivered_at: null,
    });
    events.emit('invoice.created', invoice, origin);
    for (const item of pending) {
      const before = snapshot(item);
      item.invoice = id;
      events.emit('invoiceitem.updated', item, origin, { before });
    }
    if (input.finalizeNow) finalize(invoice, now, origin);
    return invoice;
  };

  const finalizeDue = (testClock: TestClock, until: number): void => {
    const drafts = collection
      .newestFirst()
      .reverse()
      .filter((i) => i.status === 'draft' && i.test_clock === testClock.id && i.automatically_finalizes_at !== null && i.automatically_finalizes_at <= until);
    for (const invoice of drafts) finalize(invoice, invoice.automatically_finalizes_at ?? until, automatic);
  };

  const update = (invoice: Invoice, change: (invoice: Invoice) => void, origin: EventOrigin): void => {
    const before = snapshot(invoice);
    change(invoice);
    events.emit('invoice.updated', invoice, origin, { before });
  };

  const routes = [
    route({ method: 'GET', path: '/v1/invoices/:id', params: {}, handle: (_params, path) => require(path['id'] ?? '', 'id') }),
    route({
      method: 'POST',
      path: '/v1/invoices/:id',
      params: { metadata: metadata(), description: str() },
      handle: (params, path, ctx) => {
        const invoice = require(path['id'] ?? '', 'id');
        update(
          invoice,
          (i) => {
            i.metadata = mergeMetadata(i.metadata, params.metadata);
            if (params.description !== undefined) i.description = params.description;
          },
          ctx.origin,
        );
        return invoice;
      },
    }),
    route({
      method: 'GET',
      path: '/v1/invoices',
      params: { ...listParams, customer: str(), subscription: str(), status: oneOf(invoiceStatuses), collection_method: oneOf(['charge_automatically', 'send_invoice']) },
      handle: (params) => {
        const found = collection
          .newestFirst()
          .filter(
            (i) =>
              (params.customer === undefined || i.customer === params.customer) &&
              (params.subscription === undefined || i.parent.subscription_details.subscription === params.subscription) &&
              (params.status === undefined || i.status === params.status) &&
              (params.collection_method === undefined || i.collection_method === params.collection_method),
          );
        return paginate(found, params, '/v1/invoices');
      },
    }),
    route({
      method: 'GET',
      path: '/v1/invoices/:id/lines',
      params: { limit: listParams.limit, starting_after: listParams.starting_after, ending_before: listParams.ending_before },
      handle: (params, path) => {
        const invoice = require(path['id'] ?? '', 'id');
        // Lines carry no `created`; the invoice's stands in so the shared paginator can order them as listed.
        const lines = invoice.lines.data.map((line) => ({ ...line, created: invoice.created }));
        const page = paginate(lines, params, invoice.lines.url);
        return { ...page, data: page.data.map(({ created: _created, ...line }) => line) };
      },
    }),
    route({ method: 'GET', path: '/v1/invoiceitems/:id', params: {}, handle: (_params, path) => requireObject(items, 'invoiceitem', path['id'] ?? '') }),
    route({
      method: 'GET',
      path: '/v1/invoiceitems',
      params: { ...listParams, customer: str(), invoice: str(), pending: bool() },
      handle: (params) => {
        const found = items
          .newestFirst()
          .filter(
            (i) =>
              (params.customer === undefined || i.customer === params.customer) &&
              (params.invoice === undefined || i.invoice === params.invoice) &&
              (params.pending === undefined || (i.invoice === null) === params.pending),
          );
        return paginate(found, params, '/v1/invoiceitems');
      },
    }),
  ];

  return { collection, require, addPendingItem, invoiceSubscription, paymentIntentOf: (invoice) => payments.get(invoice.id) ?? null, update, finalizeDue, routes };
}
