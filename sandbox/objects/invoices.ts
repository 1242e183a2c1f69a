// Invoices and invoice items (stripe-facts §8.2–8.3). An invoice's life:
//   draft ──finalize──▶ open ──collect──▶ paid            (amount_due 0: paid without a charge)
//                         └── card declined: stays open, invoice.payment_failed
// Finalization is when the customer balance in the invoice's currency is applied (each currency's balance reaches
// only invoices in that currency): `starting_balance` is that balance then, credit consumed becomes an
// `applied_to_invoice` balance transaction, `amount_due = total - credit used`, and `ending_balance` the balance after.
// Subscription-create invoices finalize at once; renewal drafts finalize an hour after they are made (Stripe's
// auto-advance), which a test clock advance runs through. Pending invoice items (prorations) wait for the customer's
// next subscription invoice.
// One-off invoices (`POST /v1/invoices`, billing_reason `manual`) take the customer's pending invoice items when
// asked to (`pending_invoice_items_behavior=include`), finalize on `/finalize` (no payment attempt: Stripe's
// auto-advance collection an hour later is not modelled), and are paid by `/pay` (a draft is finalized first) or
// voided by `/void` (giving back the balance credit they consumed).
import { snapshot } from '../core/diff.js';
import { automatic } from '../core/event-bus.js';
import { invalidRequest, parameterMissing, requireObject, SandboxError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { listParams, paginate, requireFilterIds } from '../core/list.js';
import { bool, currency, int, mergeMetadata, metadata, object, oneOf, required, str } from '../core/params.js';
import { route } from '../http/router.js';
import type { Core } from '../core/core.js';
import type { EventOrigin } from '../core/event-bus.js';
import type { Parsed } from '../core/params.js';
import type { Collection, StripeObject } from '../core/store.js';
import type { Route } from '../http/router.js';
import type { Catalog, Price } from './catalog.js';
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

/** A line made from a one-off invoice item. */
export interface InvoiceItemParent {
  invoice_item_details: { invoice_item: string; proration: boolean; proration_details: { credited_items: null }; subscription: null };
  subscription_item_details: null;
  type: 'invoice_item_details';
}

export interface InvoiceLine {
  id: string;
  object: 'line_item';
  amount: number;
  currency: string;
  description: string | null;
  discount_amounts: never[];
  discountable: boolean;
  discounts: never[];
  invoice: string;
  livemode: false;
  metadata: Record<string, string>;
  parent: SubscriptionItemParent | InvoiceItemParent;
  period: Period;
  pretax_credit_amounts: never[];
  pricing: PriceDetails | null;
  quantity: number;
  quantity_decimal: string;
  subscription: string | null;
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
  description: string | null;
  discountable: boolean;
  discounts: never[];
  invoice: string | null;
  livemode: false;
  metadata: Record<string, string>;
  /** Null for a one-off item (`POST /v1/invoiceitems`); prorations name their subscription. */
  parent: { subscription_details: { subscription: string; subscription_item: string }; type: 'subscription_details' } | null;
  period: Period;
  /** Null when the item was made from an amount rather than a price. */
  pricing: PriceDetails | null;
  proration: boolean;
  quantity: number;
  quantity_decimal: string;
  tax_rates: never[];
  test_clock: string | null;
}

export interface Invoice extends StripeObject {
  object: 'invoice';
  account_country: 'US';
  account_name: string;
  account_tax_ids: null;
  amount_due: number;
  amount_overpaid: number;
  amount_paid: number;
  amount_remaining: number;
  amount_shipping: number;
  application: null;
  attempt_count: number;
  attempted: boolean;
  auto_advance: boolean;
  automatic_tax: { disabled_reason: null; enabled: false; liability: null; provider: null; status: null };
  automatically_finalizes_at: number | null;
  billing_reason: BillingReason;
  collection_method: 'charge_automatically';
  currency: string;
  customer: string;
  customer_account: null;
  customer_address: null;
  customer_email: string | null;
  customer_name: string | null;
  customer_phone: string | null;
  customer_shipping: null;
  customer_tax_exempt: 'none';
  custom_fields: null;
  default_payment_method: string | null;
  default_source: null;
  default_tax_rates: never[];
  description: string | null;
  discounts: never[];
  due_date: null;
  effective_at: number | null;
  ending_balance: number | null;
  footer: string | null;
  from_invoice: null;
  hosted_invoice_url: null;
  invoice_pdf: null;
  issuer: { type: 'self' };
  last_finalization_error: null;
  latest_revision: null;
  lines: { object: 'list'; data: InvoiceLine[]; has_more: false; url: string };
  livemode: false;
  metadata: Record<string, string>;
  next_payment_attempt: number | null;
  number: string | null;
  on_behalf_of: null;
  /** Null for a one-off invoice. */
  parent: { quote_details: null; subscription_details: { metadata: Record<string, string>; subscription: string }; type: 'subscription_details' } | null;
  payment_settings: { default_mandate: null; payment_method_options: null; payment_method_types: null };
  period_end: number;
  period_start: number;
  post_payment_credit_notes_amount: number;
  pre_payment_credit_notes_amount: number;
  receipt_number: null;
  rendering: null;
  shipping_cost: null;
  shipping_details: null;
  starting_balance: number;
  statement_descriptor: null;
  status: InvoiceStatus;
  status_transitions: { finalized_at: number | null; marked_uncollectible_at: null; paid_at: number | null; voided_at: number | null };
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

const createParams = {
  customer: required(str()),
  description: str(),
  metadata: metadata(),
  auto_advance: bool(),
  collection_method: oneOf(['charge_automatically']),
  default_payment_method: str(),
  pending_invoice_items_behavior: oneOf(['include', 'exclude']),
};

const payParams = { payment_method: str(), paid_out_of_band: bool(), off_session: bool(), forgive: bool() };

const itemParams = {
  customer: required(str()),
  amount: int(),
  currency: currency(),
  price: str(),
  /** Since API 2025-03-31.basil the price goes in `pricing[price]`; `price` is the older spelling. */
  pricing: object({ price: str() }),
  quantity: int({ min: 0 }),
  description: str(),
  metadata: metadata(),
  invoice: str(),
  discountable: bool(),
  period: object({ start: required(int({ min: 0 })), end: required(int({ min: 0 })) }),
};

const isPaid = (invoice: Invoice): boolean => invoice.status === 'paid';

function checkItem(params: Parsed<typeof itemParams>): void {
  if (params.price !== undefined || params.pricing?.price !== undefined) return;
  if (params.amount === undefined) throw parameterMissing('amount');
  if (params.currency === undefined) throw parameterMissing('currency');
}

export function createInvoices(core: Core, deps: { customers: Customers; paymentIntents: PaymentIntents; catalog: Catalog }): Invoices {
  const { store, events } = core;
  const { customers, paymentIntents, catalog } = deps;
  const collection = store.collection<Invoice>('invoice');
  const items = store.collection<InvoiceItem>('invoiceitem');
  const payments = store.sideTable<string>('invoice.payment_intent');

  const require = (id: string, param = 'invoice'): Invoice => requireObject(collection, 'invoice', id, param);

  // An invoice item has `date`, not `created`. The store orders and filters by `created`, so the field stays on the
  // stored object but is not enumerable: JSON and snapshots (events, expansions) leave it out.
  const insertItem = (item: InvoiceItem): InvoiceItem => {
    Object.defineProperty(item, 'created', { value: item.created, enumerable: false, writable: true });
    return items.insert(item);
  };

  const pricing = (price: Price): PriceDetails => ({ price_details: { price: price.id, product: price.product }, type: 'price_details', unit_amount_decimal: price.unit_amount_decimal });

  const addPendingItem = (customer: Customer, line: ChargeLine, origin: EventOrigin): InvoiceItem => {
    const item = insertItem({
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
      quantity_decimal: String(line.quantity),
      tax_rates: [],
      test_clock: customer.test_clock,
    });
    events.emit('invoiceitem.created', item, origin);
    return item;
  };

  /** What a line copies from the charge or pending item behind it. */
  type LineSource = Pick<InvoiceLine, 'amount' | 'currency' | 'period' | 'pricing' | 'quantity'> & {
    description: string | null;
    /** Null for a one-off invoice item. */
    subscription: string | null;
    subscriptionItem: string | null;
    proration: boolean;
    invoiceItem: string | null;
  };

  const parentOf = (source: LineSource): InvoiceLine['parent'] =>
    source.subscription === null || source.subscriptionItem === null
      ? {
          invoice_item_details: { invoice_item: source.invoiceItem ?? '', proration: source.proration, proration_details: { credited_items: null }, subscription: null },
          subscription_item_details: null,
          type: 'invoice_item_details',
        }
      : {
          invoice_item_details: null,
          subscription_item_details: {
            invoice_item: source.invoiceItem,
            proration: source.proration,
            proration_details: { credited_items: null },
            subscription: source.subscription,
            subscription_item: source.subscriptionItem,
          },
          type: 'subscription_item_details',
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
    parent: parentOf(source),
    period: source.period,
    pretax_credit_amounts: [],
    pricing: source.pricing,
    quantity: source.quantity,
    quantity_decimal: String(source.quantity),
    subscription: source.subscription,
    subtotal: source.amount,
    taxes: [],
  });

  const fromCharge = (line: ChargeLine): LineSource => ({ ...line, currency: line.price.currency, pricing: pricing(line.price), invoiceItem: null });
  const fromItem = (item: InvoiceItem): LineSource => ({
    ...item,
    subscription: item.parent?.subscription_details.subscription ?? null,
    subscriptionItem: item.parent?.subscription_details.subscription_item ?? null,
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

  const paymentDescription = (invoice: Invoice): string => {
    switch (invoice.billing_reason) {
      case 'subscription_create':
        return 'Subscription creation';
      case 'manual':
        return 'Payment for Invoice';
      default:
        return 'Subscription update';
    }
  };

  /**
   * Charges the amount due to `method` (the invoice's or the customer's default when absent). A decline leaves the
   * invoice open with `invoice.payment_failed` and is returned, so `/pay` can answer Stripe's 402 with it.
   */
  const collect = (invoice: Invoice, customer: Customer, at: number, origin: EventOrigin, method?: string): SandboxError | null => {
    if (invoice.amount_due === 0) {
      markPaid(invoice, at, origin);
      return null;
    }
    const before = snapshot(invoice);
    invoice.attempt_count += 1;
    invoice.attempted = true;
    const chosen = method ?? invoice.default_payment_method ?? customer.invoice_settings.default_payment_method;
    let declined: SandboxError | null = null;
    if (chosen !== null) {
      try {
        const intent = paymentIntents.collect(
          { amount: invoice.amount_due, currency: invoice.currency, customer: customer.id, paymentMethod: chosen, description: paymentDescription(invoice) },
          origin,
        );
        payments.set(invoice.id, intent.id);
        markPaid(invoice, at, origin);
        return null;
      } catch (error) {
        // Only a decline is a payment outcome; anything else is a sandbox fault and must surface.
        if (!(error instanceof SandboxError) || error.status !== 402) throw error;
        declined = error;
      }
    }
    events.emit('invoice.payment_failed', invoice, origin, { before });
    return declined;
  };

  /** Applies the customer balance (stripe-facts §8.2) and opens the invoice; a $0 invoice is paid there and then. */
  const finalize = (invoice: Invoice, at: number, origin: EventOrigin, then: 'collect' | 'open'): void => {
    const customer = customers.require(invoice.customer);
    const before = snapshot(invoice);
    // The balance in the invoice's currency (stripe-facts §8.1: a balance applies only to invoices in its currency).
    const balance = customers.balanceIn(customer, invoice.currency);
    // Credit is consumed up to the total; a debit is added; a negative total is itself credit for the customer.
    const delta = invoice.total < 0 ? invoice.total : balance < 0 ? Math.min(-balance, invoice.total) : -balance;
    invoice.starting_balance = balance;
    if (delta !== 0) {
      customers.changeBalance(customer, { amount: delta, currency: invoice.currency, type: 'applied_to_invoice', invoice: invoice.id }, origin);
    }
    invoice.ending_balance = customers.balanceIn(customer, invoice.currency);
    invoice.amount_due = invoice.total < 0 ? 0 : invoice.total - delta;
    invoice.amount_remaining = invoice.amount_due;
    invoice.status = 'open';
    invoice.number = customers.takeInvoiceNumber(customer);
    invoice.effective_at = at;
    invoice.automatically_finalizes_at = null;
    invoice.status_transitions.finalized_at = at;
    invoice.webhooks_delivered_at = at;
    events.emit('invoice.finalized', invoice, origin, { before });
    if (then === 'collect' || invoice.amount_due === 0) collect(invoice, customer, at, origin);
  };

  interface DraftInput {
    customer: Customer;
    subscription: SubscriptionInvoice['subscription'] | null;
    billingReason: BillingReason;
    period: Period;
    lines: LineSource[];
    /** Whether the customer's pending invoice items join the invoice. */
    takePending: boolean;
    autoAdvance: boolean;
    automaticallyFinalizesAt: number | null;
    description: string | null;
    metadata: Record<string, string>;
    defaultPaymentMethod: string | null;
    at: number;
  }

  const draft = (input: DraftInput, origin: EventOrigin): Invoice => {
    const { customer, subscription, at: now } = input;
    const id = newId('in');
    const pending = input.takePending ? items.newestFirst().reverse().filter((item) => item.customer === customer.id && item.invoice === null) : [];
    const lines = [...input.lines.map((line) => lineFor(id, line)), ...pending.map((item) => lineFor(id, fromItem(item)))];
    const total = lines.reduce((sum, line) => sum + line.amount, 0);
    const currency = lines[0]?.currency ?? customer.currency ?? 'usd';
    const invoice = collection.insert({
      id,
      object: 'invoice',
      account_country: 'US',
      account_name: 'Interlock sandbox',
      account_tax_ids: null,
      amount_due: total,
      amount_overpaid: 0,
      amount_paid: 0,
      amount_remaining: total,
      amount_shipping: 0,
      application: null,
      attempt_count: 0,
      attempted: false,
      auto_advance: input.autoAdvance,
      automatic_tax: { disabled_reason: null, enabled: false, liability: null, provider: null, status: null },
      automatically_finalizes_at: input.automaticallyFinalizesAt,
      billing_reason: input.billingReason,
      collection_method: 'charge_automatically',
      created: now,
      currency,
      customer: customer.id,
      customer_account: null,
      customer_address: null,
      customer_email: customer.email,
      customer_name: customer.name,
      customer_phone: customer.phone,
      customer_shipping: null,
      customer_tax_exempt: 'none',
      custom_fields: null,
      default_payment_method: input.defaultPaymentMethod,
      default_source: null,
      default_tax_rates: [],
      description: input.description,
      discounts: [],
      due_date: null,
      effective_at: null,
      ending_balance: null,
      footer: customer.invoice_settings.footer,
      from_invoice: null,
      hosted_invoice_url: null,
      invoice_pdf: null,
      issuer: { type: 'self' },
      last_finalization_error: null,
      latest_revision: null,
      lines: { object: 'list', data: lines, has_more: false, url: `/v1/invoices/${id}/lines` },
      livemode: false,
      metadata: input.metadata,
      next_payment_attempt: null,
      number: null,
      on_behalf_of: null,
      parent:
        subscription === null
          ? null
          : { quote_details: null, subscription_details: { metadata: { ...subscription.metadata }, subscription: subscription.id }, type: 'subscription_details' },
      payment_settings: { default_mandate: null, payment_method_options: null, payment_method_types: null },
      period_end: input.period.end,
      period_start: input.period.start,
      post_payment_credit_notes_amount: 0,
      pre_payment_credit_notes_amount: 0,
      receipt_number: null,
      rendering: null,
      shipping_cost: null,
      shipping_details: null,
      starting_balance: customers.balanceIn(customer, currency),
      statement_descriptor: null,
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
    customers.adoptCurrency(customer, currency, origin);
    // Stripe has no `invoiceitem.updated` event: an item joining an invoice shows only on the invoice's events.
    for (const item of pending) item.invoice = id;
    return invoice;
  };

  const invoiceSubscription = (input: SubscriptionInvoice, origin: EventOrigin): Invoice => {
    const invoice = draft(
      {
        customer: input.customer,
        subscription: input.subscription,
        billingReason: input.billingReason,
        period: input.period,
        lines: input.lines.map(fromCharge),
        takePending: true,
        autoAdvance: true,
        automaticallyFinalizesAt: input.finalizeNow ? null : input.at + AUTO_FINALIZE_SECONDS,
        description: null,
        metadata: {},
        defaultPaymentMethod: input.subscription.default_payment_method,
        at: input.at,
      },
      origin,
    );
    if (input.finalizeNow) finalize(invoice, input.at, origin, 'collect');
    return invoice;
  };

  const finalizeDue = (testClock: TestClock, until: number): void => {
    const drafts = collection
      .newestFirst()
      .reverse()
      .filter((i) => i.status === 'draft' && i.test_clock === testClock.id && i.automatically_finalizes_at !== null && i.automatically_finalizes_at <= until);
    for (const invoice of drafts) finalize(invoice, invoice.automatically_finalizes_at ?? until, automatic, 'collect');
  };

  const update = (invoice: Invoice, change: (invoice: Invoice) => void, origin: EventOrigin): void => {
    const before = snapshot(invoice);
    change(invoice);
    events.emit('invoice.updated', invoice, origin, { before });
  };

  const requireStatus = (invoice: Invoice, allowed: readonly InvoiceStatus[], action: string): void => {
    if (!allowed.includes(invoice.status)) {
      throw invalidRequest(`You can only ${action} an invoice with a status of ${allowed.join(' or ')}. This invoice has a status of ${invoice.status}.`, { code: 'invoice_unexpected_state' });
    }
  };

  const createItem = (params: Parsed<typeof itemParams>, origin: EventOrigin): InvoiceItem => {
    const customer = customers.require(params.customer, 'customer');
    const priceId = params.pricing?.price ?? params.price;
    const price = priceId === undefined ? null : catalog.requirePrice(priceId, params.price === undefined ? 'pricing[price]' : 'price');
    const quantity = params.quantity ?? 1;
    const amount = price === null ? (params.amount ?? 0) : price.unit_amount * quantity;
    const currency = price?.currency ?? (params.currency ?? '').toLowerCase();
    const target = params.invoice === undefined ? null : require(params.invoice, 'invoice');
    if (target !== null) requireStatus(target, ['draft'], 'add items to');
    const now = customers.nowFor(customer);
    const item = insertItem({
      id: newId('ii'),
      object: 'invoiceitem',
      amount,
      created: now,
      currency,
      customer: customer.id,
      customer_account: null,
      date: now,
      description: params.description ?? null,
      discountable: params.discountable ?? true,
      discounts: [],
      invoice: null,
      livemode: false,
      metadata: mergeMetadata({}, params.metadata),
      parent: null,
      period: params.period ?? { start: now, end: now },
      pricing: price === null ? null : pricing(price),
      proration: false,
      quantity,
      quantity_decimal: String(quantity),
      tax_rates: [],
      test_clock: customer.test_clock,
    });
    events.emit('invoiceitem.created', item, origin);
    if (target !== null) {
      update(
        target,
        (invoice) => {
          const line = lineFor(invoice.id, fromItem(item));
          invoice.lines.data.push(line);
          for (const key of ['subtotal', 'subtotal_excluding_tax', 'total', 'total_excluding_tax', 'amount_due', 'amount_remaining'] as const) invoice[key] += line.amount;
        },
        origin,
      );
      item.invoice = target.id;
    }
    return item;
  };

  const createOneOff = (params: Parsed<typeof createParams>, origin: EventOrigin): Invoice => {
    const customer = customers.require(params.customer, 'customer');
    const now = customers.nowFor(customer);
    const autoAdvance = params.auto_advance ?? false;
    return draft(
      {
        customer,
        subscription: null,
        billingReason: 'manual',
        period: { start: now, end: now },
        lines: [],
        // Since API 2022-08-01 pending items stay out of a new invoice unless asked for.
        takePending: params.pending_invoice_items_behavior === 'include',
        autoAdvance,
        automaticallyFinalizesAt: autoAdvance ? now + AUTO_FINALIZE_SECONDS : null,
        description: params.description ?? null,
        metadata: mergeMetadata({}, params.metadata),
        defaultPaymentMethod: params.default_payment_method ?? null,
        at: now,
      },
      origin,
    );
  };

  const pay = (invoice: Invoice, params: Parsed<typeof payParams>, origin: EventOrigin): Invoice => {
    if (isPaid(invoice)) throw invalidRequest('Invoice is already paid', { code: 'invoice_unexpected_state' });
    requireStatus(invoice, ['draft', 'open'], 'pay');
    const customer = customers.require(invoice.customer);
    const now = customers.nowFor(customer);
    if (invoice.status === 'draft') finalize(invoice, now, origin, 'open');
    // Finalizing a $0 draft already paid it.
    if (isPaid(invoice)) return invoice;
    if (params.paid_out_of_band === true) {
      markPaid(invoice, now, origin);
      return invoice;
    }
    const method = params.payment_method ?? invoice.default_payment_method ?? customer.invoice_settings.default_payment_method;
    if (method === null) {
      throw invalidRequest(
        'This customer has no attached payment source or default payment method. Please consider adding a default payment method. For more information, visit https://stripe.com/docs/billing/subscriptions/payment-methods-setting#payment-method-priority.',
        { code: 'resource_missing' },
      );
    }
    const declined = collect(invoice, customer, now, origin, method);
    if (declined !== null) throw declined;
    return invoice;
  };

  const voidInvoice = (invoice: Invoice, origin: EventOrigin): Invoice => {
    requireStatus(invoice, ['open', 'uncollectible'], 'void');
    const customer = customers.require(invoice.customer);
    // Credit the invoice consumed goes back to the customer (`unapplied_from_invoice`, stripe-facts §8.1).
    const consumed = invoice.starting_balance - (invoice.ending_balance ?? invoice.starting_balance);
    if (consumed !== 0) customers.changeBalance(customer, { amount: consumed, currency: invoice.currency, type: 'unapplied_from_invoice', invoice: invoice.id }, origin);
    const before = snapshot(invoice);
    invoice.status = 'void';
    invoice.amount_remaining = 0;
    invoice.next_payment_attempt = null;
    invoice.status_transitions.voided_at = customers.nowFor(customer);
    events.emit('invoice.voided', invoice, origin, { before });
    return invoice;
  };

  const routes = [
    route({ method: 'POST', path: '/v1/invoices', params: createParams, handle: (params, _path, ctx) => createOneOff(params, ctx.origin) }),
    route({
      method: 'POST',
      path: '/v1/invoices/:id/finalize',
      params: { auto_advance: bool() },
      handle: (params, path, ctx) => {
        const invoice = require(path['id'] ?? '', 'id');
        requireStatus(invoice, ['draft'], 'finalize');
        if (params.auto_advance !== undefined) invoice.auto_advance = params.auto_advance;
        finalize(invoice, customers.nowFor(customers.require(invoice.customer)), ctx.origin, 'open');
        return invoice;
      },
    }),
    route({ method: 'POST', path: '/v1/invoices/:id/pay', params: payParams, handle: (params, path, ctx) => pay(require(path['id'] ?? '', 'id'), params, ctx.origin) }),
    route({ method: 'POST', path: '/v1/invoices/:id/void', params: {}, handle: (_params, path, ctx) => voidInvoice(require(path['id'] ?? '', 'id'), ctx.origin) }),
    route({ method: 'POST', path: '/v1/invoiceitems', params: itemParams, check: checkItem, handle: (params, _path, ctx) => createItem(params, ctx.origin) }),
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
        requireFilterIds(store, { customer: params.customer, subscription: params.subscription });
        const found = collection
          .newestFirst()
          .filter(
            (i) =>
              (params.customer === undefined || i.customer === params.customer) &&
              (params.subscription === undefined || i.parent?.subscription_details.subscription === params.subscription) &&
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
        requireFilterIds(store, { customer: params.customer, invoice: params.invoice });
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
