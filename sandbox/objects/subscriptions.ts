// Subscriptions and their items (stripe-facts §8.2–8.3, §8.5; scenarios.md §3.3, §3.7):
//   incomplete ──first invoice paid──▶ active ──period end (test clock advance)──▶ active, renewal invoice
//        └── card declined: stays incomplete                active ──cancel──▶ canceled
// The billing period lives on each item (`current_period_start/end`, as since API 2025-03-31.basil), stepped
// from `billing_cycle_anchor`. Changing an item's price or quantity mid-period prorates: an "Unused time" credit
// for the old price and a "Remaining time" charge for the new one over the rest of the period, as pending invoice
// items (`create_prorations`), invoiced at once (`always_invoice`), or not at all (`none`).
import { snapshot } from '../core/diff.js';
import { automatic } from '../core/event-bus.js';
import { invalidRequest, requireObject, resourceMissing } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { listParams, paginate, requireFilterIds } from '../core/list.js';
import { formatAmount } from '../core/money.js';
import { arrayOf, int, mergeMetadata, metadata, object, oneOf, required, str } from '../core/params.js';
import { route } from '../http/router.js';
import type { Core } from '../core/core.js';
import type { EventOrigin } from '../core/event-bus.js';
import type { Parsed } from '../core/params.js';
import type { Collection, StripeObject } from '../core/store.js';
import type { Route } from '../http/router.js';
import type { Catalog, Interval, Price } from './catalog.js';
import type { Customer, Customers } from './customers.js';
import type { ChargeLine, Invoices, Period } from './invoices.js';
import type { TestClock } from './test-clocks.js';

export const subscriptionStatuses = ['incomplete', 'incomplete_expired', 'trialing', 'active', 'past_due', 'canceled', 'unpaid', 'paused'] as const;
export type SubscriptionStatus = (typeof subscriptionStatuses)[number];

export const prorationBehaviors = ['create_prorations', 'always_invoice', 'none'] as const;
export type ProrationBehavior = (typeof prorationBehaviors)[number];

/** The legacy plan view of a price that subscription items still carry. */
interface Plan {
  id: string;
  object: 'plan';
  active: boolean;
  amount: number;
  amount_decimal: string;
  billing_scheme: 'per_unit';
  created: number;
  currency: string;
  interval: Interval;
  interval_count: number;
  livemode: false;
  metadata: Record<string, string>;
  meter: null;
  nickname: string | null;
  product: string;
  tiers_mode: null;
  transform_usage: null;
  trial_period_days: null;
  usage_type: 'licensed';
}

export interface SubscriptionItem extends StripeObject {
  object: 'subscription_item';
  billing_thresholds: null;
  current_period_end: number;
  current_period_start: number;
  current_trial: null;
  discounts: never[];
  metadata: Record<string, string>;
  plan: Plan;
  price: Price;
  quantity: number;
  subscription: string;
  tax_rates: never[];
}

export interface Subscription extends StripeObject {
  object: 'subscription';
  application: null;
  application_fee_percent: null;
  automatic_tax: { disabled_reason: null; enabled: false; liability: null };
  billing_cycle_anchor: number;
  billing_cycle_anchor_config: null;
  billing_mode: { flexible: null; type: 'classic' };
  billing_schedules: never[];
  billing_thresholds: null;
  cancel_at: number | null;
  cancel_at_period_end: boolean;
  canceled_at: number | null;
  cancellation_details: { comment: null; feedback: null; feedback_option: null; reason: 'cancellation_requested' | null };
  collection_method: 'charge_automatically';
  currency: string;
  customer: string;
  customer_account: null;
  days_until_due: null;
  default_payment_method: string | null;
  default_source: null;
  description: string | null;
  discounts: never[];
  ended_at: number | null;
  invoice_settings: { account_tax_ids: null; custom_fields: null; description: null; footer: null; issuer: { type: 'self' } };
  items: { object: 'list'; data: SubscriptionItem[]; has_more: false; total_count: number; url: string };
  latest_invoice: string | null;
  livemode: false;
  managed_payments: null;
  metadata: Record<string, string>;
  next_pending_invoice_item_invoice: null;
  on_behalf_of: null;
  pause_collection: null;
  payment_settings: { payment_method_options: null; payment_method_types: null; save_default_payment_method: 'off' };
  pending_invoice_item_interval: null;
  pending_setup_intent: null;
  pending_update: null;
  schedule: null;
  start_date: number;
  status: SubscriptionStatus;
  test_clock: string | null;
  transfer_data: null;
  trial_end: null;
  trial_settings: { end_behavior: { billing_cycle_anchor: null; missing_payment_method: 'create_invoice' } };
  trial_start: null;
}

const itemParam = object({ id: str(), price: str(), quantity: int({ min: 0 }), metadata: metadata() });
const createParams = {
  customer: required(str()),
  items: required(arrayOf(itemParam)),
  default_payment_method: str(),
  description: str(),
  metadata: metadata(),
  proration_behavior: oneOf(prorationBehaviors),
};
type CreateParams = Parsed<typeof createParams>;

const updateParams = {
  items: arrayOf(itemParam),
  default_payment_method: str(),
  description: str(),
  metadata: metadata(),
  proration_behavior: oneOf(prorationBehaviors),
  proration_date: int({ min: 0 }),
};
type UpdateParams = Parsed<typeof updateParams>;

/** `n` billing intervals after `from`; months and years keep the anchor's day, clamped to the month's last. */
export function addIntervals(from: number, interval: Interval, count: number): number {
  switch (interval) {
    case 'day':
      return from + count * 86_400;
    case 'week':
      return from + count * 7 * 86_400;
    case 'month':
    case 'year': {
      const date = new Date(from * 1000);
      const months = interval === 'month' ? count : count * 12;
      const target = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + months, 1, date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds()));
      const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
      target.setUTCDate(Math.min(date.getUTCDate(), lastDay));
      return Math.floor(target.getTime() / 1000);
    }
  }
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;
/** Dates as Stripe writes them in proration descriptions: `13 Sep 2026`. */
function day(seconds: number): string {
  const date = new Date(seconds * 1000);
  return `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()] ?? ''} ${date.getUTCFullYear()}`;
}

function planOf(price: Price): Plan {
  const recurring = price.recurring ?? { interval: 'month', interval_count: 1 };
  return {
    id: price.id,
    object: 'plan',
    active: price.active,
    amount: price.unit_amount,
    amount_decimal: price.unit_amount_decimal,
    billing_scheme: 'per_unit',
    created: price.created,
    currency: price.currency,
    interval: recurring.interval,
    interval_count: recurring.interval_count,
    livemode: false,
    metadata: price.metadata,
    meter: null,
    nickname: price.nickname,
    product: price.product,
    tiers_mode: null,
    transform_usage: null,
    trial_period_days: null,
    usage_type: 'licensed',
  };
}

export interface Subscriptions {
  readonly collection: Collection<Subscription>;
  /** Test clock step: renews every subscription of the clock's customers whose period ended by `until`. */
  renewDue(clock: TestClock, until: number): void;
  routes: Route[];
}

export function createSubscriptions(core: Core, deps: { customers: Customers; catalog: Catalog; invoices: Invoices }): Subscriptions {
  const { store, events } = core;
  const { customers, catalog, invoices } = deps;
  const collection = store.collection<Subscription>('subscription');
  // Completed billing periods since the anchor: period n runs from anchor + n intervals to anchor + n + 1.
  const cycles = store.sideTable<number>('subscription.cycles');

  const require = (id: string, param = 'id'): Subscription => requireObject(collection, 'subscription', id, param);

  const recurringPrice = (id: string, param: string): Price => {
    const price = catalog.requirePrice(id, param);
    if (price.recurring === null) {
      throw invalidRequest('The price specified is set to `type=one_time` but this field only accepts prices with `type=recurring`.', { param });
    }
    return price;
  };

  const periodOf = (subscription: Subscription, price: Price): Period => {
    const cycle = cycles.get(subscription.id) ?? 0;
    const { interval, interval_count: count } = price.recurring ?? { interval: 'month', interval_count: 1 };
    return { start: addIntervals(subscription.billing_cycle_anchor, interval, cycle * count), end: addIntervals(subscription.billing_cycle_anchor, interval, (cycle + 1) * count) };
  };

  const productName = (price: Price): string => catalog.requireProduct(price.product).name;
  const quantityPrefix = (quantity: number): string => (quantity === 1 ? '' : `${quantity} × `);

  const regularLine = (subscription: Subscription, item: SubscriptionItem): ChargeLine => {
    const { price, quantity } = item;
    const { interval, interval_count: count } = price.recurring ?? { interval: 'month', interval_count: 1 };
    const every = count === 1 ? `/ ${interval}` : `every ${count} ${interval}s`;
    return {
      amount: price.unit_amount * quantity,
      description: `${quantity} × ${productName(price)} (at ${formatAmount(price.unit_amount, price.currency)} ${every})`,
      period: { start: item.current_period_start, end: item.current_period_end },
      price,
      quantity,
      subscription: subscription.id,
      subscriptionItem: item.id,
      proration: false,
    };
  };

  const newItem = (subscription: Subscription, price: Price, quantity: number, itemMetadata: Record<string, string>, created: number): SubscriptionItem => {
    const period = periodOf(subscription, price);
    return {
      id: newId('si'),
      object: 'subscription_item',
      billing_thresholds: null,
      created,
      current_period_end: period.end,
      current_period_start: period.start,
      current_trial: null,
      discounts: [],
      metadata: itemMetadata,
      plan: planOf(price),
      price,
      quantity,
      subscription: subscription.id,
      tax_rates: [],
    };
  };

  const paymentMethodFor = (customer: Customer, requested: string | undefined): string | null => {
    const method = requested ?? customer.invoice_settings.default_payment_method;
    if (method === null) {
      throw invalidRequest(
        'This customer has no attached payment source or default payment method. Please consider adding a default payment method. For more information, visit https://stripe.com/docs/billing/subscriptions/payment-methods-setting#payment-method-priority.',
        { code: 'resource_missing' },
      );
    }
    return requested ?? null;
  };

  const create = (params: CreateParams, origin: EventOrigin): Subscription => {
    const customer = customers.require(params.customer);
    const entries = params.items.map((entry, index) => ({ entry, price: recurringPrice(entry.price ?? '', `items[${index}][price]`) }));
    const defaultPaymentMethod = paymentMethodFor(customer, params.default_payment_method);
    const now = customers.nowFor(customer);
    const id = newId('sub');
    const subscription = collection.insert({
      id,
      object: 'subscription',
      application: null,
      application_fee_percent: null,
      automatic_tax: { disabled_reason: null, enabled: false, liability: null },
      billing_cycle_anchor: now,
      billing_cycle_anchor_config: null,
      billing_mode: { flexible: null, type: 'classic' },
      billing_schedules: [],
      billing_thresholds: null,
      cancel_at: null,
      cancel_at_period_end: false,
      canceled_at: null,
      cancellation_details: { comment: null, feedback: null, feedback_option: null, reason: null },
      collection_method: 'charge_automatically',
      created: now,
      currency: entries[0]?.price.currency ?? 'usd',
      customer: customer.id,
      customer_account: null,
      days_until_due: null,
      default_payment_method: defaultPaymentMethod,
      default_source: null,
      description: params.description ?? null,
      discounts: [],
      ended_at: null,
      invoice_settings: { account_tax_ids: null, custom_fields: null, description: null, footer: null, issuer: { type: 'self' } },
      items: { object: 'list', data: [], has_more: false, total_count: 0, url: `/v1/subscription_items?subscription=${id}` },
      latest_invoice: null,
      livemode: false,
      managed_payments: null,
      metadata: mergeMetadata({}, params.metadata),
      next_pending_invoice_item_invoice: null,
      on_behalf_of: null,
      pause_collection: null,
      payment_settings: { payment_method_options: null, payment_method_types: null, save_default_payment_method: 'off' },
      pending_invoice_item_interval: null,
      pending_setup_intent: null,
      pending_update: null,
      schedule: null,
      start_date: now,
      status: 'incomplete',
      test_clock: customer.test_clock,
      transfer_data: null,
      trial_end: null,
      trial_settings: { end_behavior: { billing_cycle_anchor: null, missing_payment_method: 'create_invoice' } },
      trial_start: null,
    });
    subscription.items.data = entries.map(({ entry, price }) => newItem(subscription, price, entry.quantity ?? 1, mergeMetadata({}, entry.metadata), now));
    subscription.items.total_count = subscription.items.data.length;
    events.emit('customer.subscription.created', subscription, origin);
    const invoice = invoices.invoiceSubscription(
      {
        customer,
        subscription,
        billingReason: 'subscription_create',
        period: { start: now, end: now },
        lines: subscription.items.data.map((item) => regularLine(subscription, item)),
        finalizeNow: true,
        at: now,
      },
      origin,
    );
    const before = snapshot(subscription);
    subscription.latest_invoice = invoice.id;
    if (invoice.status === 'paid') subscription.status = 'active';
    events.emit('customer.subscription.updated', subscription, origin, { before });
    return subscription;
  };

  /** The two proration lines for an item whose price or quantity changes at `at` (stripe-facts §8.3). */
  const prorate = (customer: Customer, subscription: Subscription, item: SubscriptionItem, price: Price, quantity: number, at: number, origin: EventOrigin): void => {
    const period = { start: item.current_period_start, end: item.current_period_end };
    if (at < period.start || at >= period.end) return;
    const fraction = (period.end - at) / (period.end - period.start);
    const rest = { start: at, end: period.end };
    const base = { period: rest, subscription: subscription.id, subscriptionItem: item.id, proration: true };
    if (item.quantity > 0) {
      const amount = -Math.round(item.price.unit_amount * item.quantity * fraction);
      const description = `Unused time on ${quantityPrefix(item.quantity)}${productName(item.price)} after ${day(at)}`;
      invoices.addPendingItem(customer, { ...base, amount, description, price: item.price, quantity: item.quantity }, origin);
    }
    if (quantity > 0) {
      const amount = Math.round(price.unit_amount * quantity * fraction);
      const description = `Remaining time on ${quantityPrefix(quantity)}${productName(price)} after ${day(at)}`;
      invoices.addPendingItem(customer, { ...base, amount, description, price, quantity }, origin);
    }
  };

  const update = (subscription: Subscription, params: UpdateParams, origin: EventOrigin): Subscription => {
    if (subscription.status === 'canceled') {
      throw invalidRequest('A canceled subscription can only update its cancellation_details and metadata.');
    }
    const customer = customers.require(subscription.customer);
    const at = params.proration_date ?? customers.nowFor(customer);
    const behavior = params.proration_behavior ?? 'create_prorations';
    const before = snapshot(subscription);
    subscription.metadata = mergeMetadata(subscription.metadata, params.metadata);
    for (const [index, entry] of (params.items ?? []).entries()) {
      const param = `items[${index}]`;
      const existing = entry.id === undefined ? undefined : subscription.items.data.find((i) => i.id === entry.id);
      if (entry.id !== undefined && existing === undefined) throw resourceMissing('subscription item', entry.id, `${param}[id]`);
      const itemMetadata = existing === undefined ? undefined : mergeMetadata(existing.metadata, entry.metadata, `${param}[metadata]`);
      const price = entry.price === undefined ? existing?.price : recurringPrice(entry.price, `${param}[price]`);
      if (price === undefined) throw invalidRequest(`Missing required param: ${param}[price].`, { code: 'parameter_missing', param: `${param}[price]` });
      const quantity = entry.quantity ?? existing?.quantity ?? 1;
      if (existing === undefined) {
        const added = newItem(subscription, price, quantity, mergeMetadata({}, entry.metadata), at);
        if (behavior !== 'none') prorate(customer, subscription, { ...added, quantity: 0 }, price, quantity, at, origin);
        subscription.items.data.push(added);
        continue;
      }
      const changed = price.id !== existing.price.id || quantity !== existing.quantity;
      if (changed && behavior !== 'none') prorate(customer, subscription, existing, price, quantity, at, origin);
      existing.price = price;
      existing.plan = planOf(price);
      existing.quantity = quantity;
      existing.metadata = itemMetadata ?? existing.metadata;
    }
    subscription.items.total_count = subscription.items.data.length;
    if (params.default_payment_method !== undefined) subscription.default_payment_method = params.default_payment_method;
    if (params.description !== undefined) subscription.description = params.description;
    if (behavior === 'always_invoice' && (params.items ?? []).length > 0) {
      const period = { start: at, end: at };
      const invoice = invoices.invoiceSubscription({ customer, subscription, billingReason: 'subscription_update', period, lines: [], finalizeNow: true, at }, origin);
      subscription.latest_invoice = invoice.id;
    }
    events.emit('customer.subscription.updated', subscription, origin, { before });
    return subscription;
  };

  const renewDue = (testClock: TestClock, until: number): void => {
    const due = collection
      .newestFirst()
      .reverse()
      .filter((s) => s.test_clock === testClock.id && (s.status === 'active' || s.status === 'past_due'));
    for (const subscription of due) {
      const customer = customers.require(subscription.customer);
      for (;;) {
        const first = subscription.items.data[0];
        if (first === undefined || first.current_period_end > until) break;
        const ended = { start: first.current_period_start, end: first.current_period_end };
        const before = snapshot(subscription);
        cycles.set(subscription.id, (cycles.get(subscription.id) ?? 0) + 1);
        for (const item of subscription.items.data) {
          const period = periodOf(subscription, item.price);
          item.current_period_start = period.start;
          item.current_period_end = period.end;
        }
        const invoice = invoices.invoiceSubscription(
          {
            customer,
            subscription,
            billingReason: 'subscription_cycle',
            period: ended,
            lines: subscription.items.data.map((item) => regularLine(subscription, item)),
            finalizeNow: false,
            at: ended.end,
          },
          automatic,
        );
        subscription.latest_invoice = invoice.id;
        events.emit('customer.subscription.updated', subscription, automatic, { before });
      }
    }
  };

  const cancel = (subscription: Subscription, origin: EventOrigin): Subscription => {
    if (subscription.status === 'canceled') throw invalidRequest(`No such subscription: '${subscription.id}'`, { code: 'resource_missing', param: 'id' }, 404);
    const now = customers.nowFor(customers.require(subscription.customer));
    const before = snapshot(subscription);
    subscription.status = 'canceled';
    subscription.canceled_at = now;
    subscription.ended_at = now;
    subscription.cancellation_details = { comment: null, feedback: null, feedback_option: null, reason: 'cancellation_requested' };
    events.emit('customer.subscription.deleted', subscription, origin, { before });
    return subscription;
  };

  const routes = [
    route({ method: 'POST', path: '/v1/subscriptions', params: createParams, handle: (params, _path, ctx) => create(params, ctx.origin) }),
    route({ method: 'GET', path: '/v1/subscriptions/:id', params: {}, handle: (_params, path) => require(path['id'] ?? '') }),
    route({
      method: 'POST',
      path: '/v1/subscriptions/:id',
      params: updateParams,
      handle: (params, path, ctx) => update(require(path['id'] ?? ''), params, ctx.origin),
    }),
    route({ method: 'DELETE', path: '/v1/subscriptions/:id', params: {}, handle: (_params, path, ctx) => cancel(require(path['id'] ?? ''), ctx.origin) }),
    route({
      method: 'GET',
      path: '/v1/subscriptions',
      params: { ...listParams, customer: str(), price: str(), test_clock: str(), status: oneOf([...subscriptionStatuses, 'all', 'ended']) },
      handle: (params) => {
        requireFilterIds(store, { customer: params.customer, price: params.price, test_clock: params.test_clock });
        // Without a status filter Stripe leaves canceled subscriptions out.
        const statusMatches = (s: Subscription): boolean => {
          switch (params.status) {
            case undefined:
              return s.status !== 'canceled';
            case 'all':
              return true;
            case 'ended':
              return s.status === 'canceled' || s.status === 'incomplete_expired';
            default:
              return s.status === params.status;
          }
        };
        const found = collection
          .newestFirst()
          .filter(
            (s) =>
              statusMatches(s) &&
              (params.customer === undefined || s.customer === params.customer) &&
              (params.test_clock === undefined || s.test_clock === params.test_clock) &&
              (params.price === undefined || s.items.data.some((i) => i.price.id === params.price)),
          );
        return paginate(found, params, '/v1/subscriptions');
      },
    }),
    route({
      method: 'GET',
      path: '/v1/subscription_items',
      params: { ...listParams, subscription: required(str()) },
      handle: (params) => {
        const subscription = require(params.subscription, 'subscription');
        return paginate([...subscription.items.data].reverse(), params, `/v1/subscription_items?subscription=${subscription.id}`);
      },
    }),
  ];

  return { collection, renewDue, routes };
}
