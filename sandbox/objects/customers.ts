// Customers and their credit balance (stripe-facts §8.1). The balance moves only through customer balance
// transactions: `adjustment` (API credits and debits), `initial`, `applied_to_invoice` (an invoice consuming it at
// finalization), `credit_note`. Stripe keeps one balance per currency, `invoice_credit_balance`, each applied only to
// invoices in its currency; `balance` is the one in `customer.currency`, which the first balance transaction (or
// invoice) sets. A transaction in another currency is accepted into that currency's balance and leaves `balance` as
// it is (OpenAPI: the `currency` of a balance transaction "specifies the invoice_credit_balance that this transaction
// will apply to"). `invoice_credit_balance` is includable: sent only when `expand[]` names it, as Stripe does. Stripe
// has no event for a balance transaction; the visible signal is `customer.updated`, whose `previous_attributes` name
// the moved currency's entry of `invoice_credit_balance`, and `balance` when it moved. A customer on a test clock lives
// on that clock's time.
import { previousAttributes, snapshot } from '../core/diff.js';
import { invalidRequest, requireObject, resourceMissing } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { listParams, paginate, requireFilterIds } from '../core/list.js';
import { accepted, currency, int, mergeMetadata, metadata, object, oneOf, required, str, strList } from '../core/params.js';
import { deletedIds } from '../core/store.js';
import { route } from '../http/router.js';
import type { Core } from '../core/core.js';
import type { EventOrigin } from '../core/event-bus.js';
import type { Collection, StripeObject } from '../core/store.js';
import type { VirtualExpansion } from '../http/expand.js';
import type { Route } from '../http/router.js';
import type { PaymentMethods } from './payment-methods.js';
import type { TestClocks } from './test-clocks.js';

export const customerBalanceTransactionTypes = [
  'adjustment',
  'applied_to_invoice',
  'credit_note',
  'initial',
  'invoice_overpaid',
  'invoice_too_large',
  'invoice_too_small',
  'migration',
  'unapplied_from_invoice',
  'unspent_receiver_credit',
] as const;
export type CustomerBalanceTransactionType = (typeof customerBalanceTransactionTypes)[number];

export interface Customer extends StripeObject {
  object: 'customer';
  address: null;
  /** Negative: credit the next invoice consumes; positive: owed, added to the next invoice. */
  balance: number;
  currency: string | null;
  default_source: null;
  delinquent: boolean;
  description: string | null;
  discount: null;
  email: string | null;
  invoice_prefix: string;
  invoice_settings: { custom_fields: null; default_payment_method: string | null; footer: string | null; rendering_options: null };
  livemode: false;
  metadata: Record<string, string>;
  name: string | null;
  next_invoice_sequence: number;
  phone: string | null;
  preferred_locales: string[];
  shipping: null;
  tax_exempt: 'none';
  test_clock: string | null;
}

export interface CustomerBalanceTransaction extends StripeObject {
  object: 'customer_balance_transaction';
  amount: number;
  checkout_session: null;
  credit_note: string | null;
  currency: string;
  customer: string;
  customer_account: null;
  description: string | null;
  ending_balance: number;
  invoice: string | null;
  livemode: false;
  metadata: Record<string, string>;
  type: CustomerBalanceTransactionType;
}

export interface BalanceChange {
  amount: number;
  currency: string;
  type: CustomerBalanceTransactionType;
  description?: string | null;
  metadata?: Record<string, string>;
  invoice?: string;
  creditNote?: string;
}

export interface Customers {
  readonly collection: Collection<Customer>;
  require(id: string, param?: string): Customer;
  /** The customer's present: its test clock's frozen time, or sandbox time. */
  nowFor(customer: Customer): number;
  /**
   * Records a balance transaction in the balance of its currency (and `balance` when that is the customer's currency,
   * or the customer has none yet and takes it) and announces it with `customer.updated`.
   */
  changeBalance(customer: Customer, change: BalanceChange, origin: EventOrigin): CustomerBalanceTransaction;
  /** The customer's balance in `currency` (its `invoice_credit_balance` entry, 0 if none): what an invoice in it applies. */
  balanceIn(customer: Customer, currency: string): number;
  /** Sets `currency` on a customer that has none yet (its first invoice's), announced with `customer.updated`. */
  adoptCurrency(customer: Customer, currency: string, origin: EventOrigin): void;
  /** The next invoice number, `<invoice_prefix>-0001` onwards. */
  takeInvoiceNumber(customer: Customer): string;
  routes: Route[];
  expansions: ReadonlyArray<readonly [string, VirtualExpansion]>;
}

/** What Stripe answers for a customer once deleted: the delete itself and every later retrieve. */
function deletedCustomer(id: string): { id: string; object: 'customer'; deleted: true } {
  return { id, object: 'customer', deleted: true };
}

const PREFIX_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

function invoicePrefix(): string {
  let prefix = '';
  for (let i = 0; i < 8; i++) prefix += PREFIX_ALPHABET[Math.floor(Math.random() * PREFIX_ALPHABET.length)] ?? 'A';
  return prefix;
}

const invoiceSettingsParam = object({ default_payment_method: str(), footer: str(), custom_fields: accepted(), rendering_options: accepted() });
const customerFields = {
  name: str(),
  email: str(),
  description: str(),
  phone: str(),
  metadata: metadata(),
  invoice_settings: invoiceSettingsParam,
  preferred_locales: strList(),
  balance: int(),
  address: accepted(),
  shipping: accepted(),
};

export function createCustomers(core: Core, deps: { methods: PaymentMethods; clocks: TestClocks }): Customers {
  const { store, clock, events } = core;
  const { methods, clocks } = deps;
  const collection = store.collection<Customer>('customer');
  const transactions = store.collection<CustomerBalanceTransaction>('customer_balance_transaction');

  // Ids of deleted customers: retrieving one answers Stripe's deleted_customer stub, not a 404 (the GET's 200 is
  // customer | deleted_customer in the OpenAPI document). Every other route under a deleted customer (update,
  // delete again, balance transactions, payment methods, invoices, subscriptions) still answers 404 "No such
  // customer": stripe-facts.md says nothing of how Stripe treats them. A list filtered by one (`?customer=`) answers:
  // the id is still known (core/list.ts requireFilterIds).
  const deleted = deletedIds(store, 'customer');

  const require = (id: string, param = 'customer'): Customer => requireObject(collection, 'customer', id, param);
  const nowFor = (customer: Customer): number => (customer.test_clock === null ? clock.nowSeconds() : clocks.require(customer.test_clock).frozen_time);

  // Each customer's balance per currency (`invoice_credit_balance`), kept off the stored customer so that neither a
  // plain answer nor an event carries it: Stripe sends it only when expanded.
  const creditBalances = store.sideTable<Map<string, number>>('customer.invoice_credit_balance');
  const creditBalancesOf = (customerId: string): Map<string, number> => {
    let held = creditBalances.get(customerId);
    if (held === undefined) {
      held = new Map();
      creditBalances.set(customerId, held);
    }
    return held;
  };
  const balanceIn = (customer: Customer, currency: string): number => creditBalances.get(customer.id)?.get(currency) ?? 0;
  // The customer's `invoice_credit_balance`: each currency a transaction moved, one brought back to 0 included (the
  // sandbox keeps it); `{}` for a customer without any. Signed as the OpenAPI describes it, the other way round from
  // `balance`: "If positive in a currency, the customer has a credit to apply to their next invoice denominated in that
  // currency".
  const creditBalanceOf = (customerId: string): Record<string, number> =>
    Object.fromEntries([...(creditBalances.get(customerId) ?? [])].map(([currency, balance]) => [currency, balance === 0 ? 0 : -balance]));

  /** Records a balance transaction and moves the balance of its currency, announcing nothing: the caller announces it. */
  const recordBalance = (customer: Customer, change: BalanceChange): CustomerBalanceTransaction => {
    const held = creditBalancesOf(customer.id);
    // `ending_balance` is the balance the transaction moved: `balance` in the customer's currency, else that
    // currency's entry of `invoice_credit_balance`.
    const ending = (held.get(change.currency) ?? 0) + change.amount;
    held.set(change.currency, ending);
    customer.currency ??= change.currency;
    if (customer.currency === change.currency) customer.balance = ending;
    return transactions.insert({
      id: newId('cbtxn'),
      object: 'customer_balance_transaction',
      amount: change.amount,
      checkout_session: null,
      created: nowFor(customer),
      credit_note: change.creditNote ?? null,
      currency: change.currency,
      customer: customer.id,
      customer_account: null,
      description: change.description ?? null,
      ending_balance: ending,
      invoice: change.invoice ?? null,
      livemode: false,
      metadata: change.metadata ?? {},
      type: change.type,
    });
  };

  const changeBalance = (customer: Customer, change: BalanceChange, origin: EventOrigin): CustomerBalanceTransaction => {
    const before = snapshot(customer);
    const creditsBefore = creditBalanceOf(customer.id);
    const transaction = recordBalance(customer, change);
    // The balance of the transaction's currency moved whatever `balance` did: previous_attributes names its entry of
    // invoice_credit_balance (null for a currency the customer had no balance in), and `balance` only when it moved.
    events.emit('customer.updated', customer, origin, { before, includable: { before: { invoice_credit_balance: creditsBefore }, after: { invoice_credit_balance: creditBalanceOf(customer.id) } } });
    return transaction;
  };

  /**
   * The currency the customer is billed in, taken from its first invoice (a subscription's first one included) as from
   * its first balance transaction: Stripe's `customer.currency`, which a customer without one does not keep null.
   */
  const adoptCurrency = (customer: Customer, currency: string, origin: EventOrigin): void => {
    if (customer.currency !== null) return;
    const before = snapshot(customer);
    customer.currency = currency;
    events.emit('customer.updated', customer, origin, { before });
  };

  /** A magic test id becomes a new payment method attached to the customer; a stored one must already be theirs. */
  const attach = (customer: Customer, id: string, param: string, origin: EventOrigin): string => {
    const { method } = methods.resolve(id, param);
    if (method.customer === null) {
      method.customer = customer.id;
      events.emit('payment_method.attached', method, origin);
    } else if (method.customer !== customer.id) {
      throw invalidRequest(`The customer does not have a payment method with the ID ${id}. The payment method must be attached to the customer.`, { param });
    }
    return method.id;
  };

  const methodsOf = (customerId: string, params: { type?: string }) =>
    methods.collection.newestFirst().filter((m) => m.customer === customerId && (params.type === undefined || m.type === params.type));

  const requireTransaction = (customerId: string, id: string): CustomerBalanceTransaction => {
    const found = transactions.get(id);
    if (found === undefined || found.customer !== customerId) throw resourceMissing('customer balance transaction', id);
    return found;
  };

  const routes = [
    route({
      method: 'POST',
      path: '/v1/payment_methods/:id/attach',
      params: { customer: required(str()) },
      handle: (params, path, ctx) => {
        const customer = require(params.customer);
        const { method } = methods.resolve(path['id'] ?? '', 'payment_method');
        if (method.customer !== null && method.customer !== customer.id) {
          throw invalidRequest('The payment method you provided has already been attached to a customer.', { code: 'payment_method_unexpected_state', param: 'payment_method' });
        }
        attach(customer, method.id, 'payment_method', ctx.origin);
        return method;
      },
    }),
    route({
      method: 'POST',
      path: '/v1/payment_methods/:id/detach',
      params: {},
      handle: (_params, path, ctx) => {
        const { method } = methods.resolve(path['id'] ?? '', 'payment_method');
        if (method.customer === null) {
          throw invalidRequest('The payment method you provided is not attached to a customer so detachment is impossible.', { code: 'payment_method_unexpected_state' });
        }
        const owner = collection.get(method.customer);
        if (owner !== undefined && owner.invoice_settings.default_payment_method === method.id) {
          const before = snapshot(owner);
          owner.invoice_settings.default_payment_method = null;
          events.emit('customer.updated', owner, ctx.origin, { before });
        }
        const before = snapshot(method);
        method.customer = null;
        events.emit('payment_method.detached', method, ctx.origin, { before });
        return method;
      },
    }),
    route({
      method: 'GET',
      path: '/v1/payment_methods',
      params: { ...listParams, customer: str(), type: oneOf(['card']) },
      handle: (params) => {
        requireFilterIds(store, { customer: params.customer });
        const found = methods.collection.newestFirst().filter((m) => (params.customer === undefined ? m.customer !== null : m.customer === params.customer) && (params.type === undefined || m.type === params.type));
        return paginate(found, params, '/v1/payment_methods');
      },
    }),
    route({
      method: 'GET',
      path: '/v1/customers/:customer/payment_methods',
      params: { ...listParams, type: oneOf(['card']) },
      handle: (params, path) => {
        const customer = require(path['customer'] ?? '');
        return paginate(methodsOf(customer.id, params), params, `/v1/customers/${customer.id}/payment_methods`);
      },
    }),
    route({
      method: 'POST',
      path: '/v1/customers',
      params: { ...customerFields, payment_method: str(), test_clock: str() },
      handle: (params, _path, ctx) => {
        const testClock = params.test_clock === undefined ? null : clocks.require(params.test_clock);
        const customer = collection.insert({
          id: newId('cus'),
          object: 'customer',
          address: null,
          balance: 0,
          created: testClock?.frozen_time ?? clock.nowSeconds(),
          currency: null,
          default_source: null,
          delinquent: false,
          description: params.description ?? null,
          discount: null,
          email: params.email ?? null,
          invoice_prefix: invoicePrefix(),
          invoice_settings: { custom_fields: null, default_payment_method: null, footer: params.invoice_settings?.footer ?? null, rendering_options: null },
          livemode: false,
          metadata: mergeMetadata({}, params.metadata),
          name: params.name ?? null,
          next_invoice_sequence: 1,
          phone: params.phone ?? null,
          preferred_locales: params.preferred_locales ?? [],
          shipping: null,
          tax_exempt: 'none',
          test_clock: testClock?.id ?? null,
        });
        const attached = params.payment_method === undefined ? null : attach(customer, params.payment_method, 'payment_method', ctx.origin);
        const wanted = params.invoice_settings?.default_payment_method;
        if (wanted !== undefined) {
          // Naming the same magic id twice (`payment_method` and the default) means the one just attached.
          customer.invoice_settings.default_payment_method =
            wanted === params.payment_method && attached !== null ? attached : attach(customer, wanted, 'invoice_settings[default_payment_method]', ctx.origin);
        }
        events.emit('customer.created', customer, ctx.origin);
        if (params.balance !== undefined && params.balance !== 0) {
          // The opening balance has no currency of its own until the customer has one; Stripe bills in usd here.
          changeBalance(customer, { amount: params.balance, currency: 'usd', type: 'initial' }, ctx.origin);
        }
        return customer;
      },
    }),
    route({
      method: 'GET',
      path: '/v1/customers/:id',
      params: {},
      handle: (_params, path) => {
        const id = path['id'] ?? '';
        return deleted.get(id) === true ? deletedCustomer(id) : require(id, 'id');
      },
    }),
    route({
      method: 'POST',
      path: '/v1/customers/:id',
      params: customerFields,
      handle: (params, path, ctx) => {
        const customer = require(path['id'] ?? '', 'id');
        const before = snapshot(customer);
        const creditsBefore = creditBalanceOf(customer.id);
        customer.metadata = mergeMetadata(customer.metadata, params.metadata);
        if (params.name !== undefined) customer.name = params.name;
        if (params.email !== undefined) customer.email = params.email;
        if (params.description !== undefined) customer.description = params.description;
        if (params.phone !== undefined) customer.phone = params.phone;
        if (params.preferred_locales !== undefined) customer.preferred_locales = params.preferred_locales;
        const wanted = params.invoice_settings?.default_payment_method;
        if (wanted !== undefined) customer.invoice_settings.default_payment_method = attach(customer, wanted, 'invoice_settings[default_payment_method]', ctx.origin);
        if (params.invoice_settings?.footer !== undefined) customer.invoice_settings.footer = params.invoice_settings.footer;
        // Setting `balance` directly is an adjustment by the difference (stripe-facts §8.1), recorded here and announced
        // with the rest of the update.
        if (params.balance !== undefined && params.balance !== customer.balance) {
          recordBalance(customer, { amount: params.balance - customer.balance, currency: customer.currency ?? 'usd', type: 'adjustment' });
        }
        // One update is one customer.updated, sent only when a property changed ("Occurs whenever any property of a
        // customer changes"), its previous_attributes naming every field that did, `balance` included.
        const includable = { before: { invoice_credit_balance: creditsBefore }, after: { invoice_credit_balance: creditBalanceOf(customer.id) } };
        if (previousAttributes({ ...before, ...includable.before }, { ...customer, ...includable.after }) !== undefined) {
          events.emit('customer.updated', customer, ctx.origin, { before, includable });
        }
        return customer;
      },
    }),
    route({
      method: 'DELETE',
      path: '/v1/customers/:id',
      params: {},
      handle: (_params, path, ctx) => {
        const customer = require(path['id'] ?? '', 'id');
        collection.remove(customer.id);
        deleted.set(customer.id, true);
        events.emit('customer.deleted', customer, ctx.origin);
        return deletedCustomer(customer.id);
      },
    }),
    route({
      method: 'GET',
      path: '/v1/customers',
      params: { ...listParams, email: str(), test_clock: str() },
      handle: (params) => {
        requireFilterIds(store, { test_clock: params.test_clock });
        const items = collection
          .newestFirst()
          .filter((c) => (params.email === undefined || c.email === params.email) && (params.test_clock === undefined || c.test_clock === params.test_clock));
        return paginate(items, params, '/v1/customers');
      },
    }),
    route({
      method: 'POST',
      path: '/v1/customers/:customer/balance_transactions',
      params: { amount: required(int()), currency: required(currency()), description: str({ maxLength: 350 }), metadata: metadata() },
      handle: (params, path, ctx) => {
        const customer = require(path['customer'] ?? '');
        const change = { amount: params.amount, currency: params.currency.toLowerCase(), type: 'adjustment' as const, description: params.description ?? null, metadata: mergeMetadata({}, params.metadata) };
        return changeBalance(customer, change, ctx.origin);
      },
    }),
    route({
      method: 'GET',
      path: '/v1/customers/:customer/balance_transactions',
      params: { ...listParams, invoice: str() },
      handle: (params, path) => {
        const customer = require(path['customer'] ?? '');
        requireFilterIds(store, { invoice: params.invoice });
        const items = transactions.newestFirst().filter((t) => t.customer === customer.id && (params.invoice === undefined || t.invoice === params.invoice));
        return paginate(items, params, `/v1/customers/${customer.id}/balance_transactions`);
      },
    }),
    route({
      method: 'GET',
      path: '/v1/customers/:customer/balance_transactions/:id',
      params: {},
      handle: (_params, path) => requireTransaction(require(path['customer'] ?? '').id, path['id'] ?? ''),
    }),
    route({
      method: 'POST',
      path: '/v1/customers/:customer/balance_transactions/:id',
      params: { description: str({ maxLength: 350 }), metadata: metadata() },
      handle: (params, path) => {
        const transaction = requireTransaction(require(path['customer'] ?? '').id, path['id'] ?? '');
        transaction.metadata = mergeMetadata(transaction.metadata, params.metadata);
        if (params.description !== undefined) transaction.description = params.description;
        return transaction;
      },
    }),
  ];

  // Numbering is bookkeeping, not a change anyone listens for: no event.
  const takeInvoiceNumber = (customer: Customer): string => {
    const number = `${customer.invoice_prefix}-${String(customer.next_invoice_sequence).padStart(4, '0')}`;
    customer.next_invoice_sequence += 1;
    return number;
  };

  const invoiceCreditBalance: VirtualExpansion = (customer) => creditBalanceOf(String(customer['id']));

  return {
    collection,
    require,
    nowFor,
    changeBalance,
    balanceIn,
    adoptCurrency,
    takeInvoiceNumber,
    routes,
    expansions: [['customer.invoice_credit_balance', invoiceCreditBalance]],
  };
}
