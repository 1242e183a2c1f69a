// Charges: made by confirming a PaymentIntent, never created directly here. They carry the running refund total
// (`amount_refunded`, `refunded` once fully refunded) and `disputed`, which stays true once any dispute opened.
import { snapshot } from '../core/diff.js';
import { requireObject } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { listParams, paginate } from '../core/list.js';
import { mergeMetadata, metadata, str } from '../core/params.js';
import { route } from '../http/router.js';
import type { Core } from '../core/core.js';
import type { EventOrigin } from '../core/event-bus.js';
import type { Collection, StripeObject } from '../core/store.js';
import type { Route } from '../http/router.js';
import type { BalanceTransactions } from './balance-transactions.js';
import type { PaymentMethod, TestCard } from './payment-methods.js';

export interface Charge extends StripeObject {
  object: 'charge';
  amount: number;
  amount_captured: number;
  amount_refunded: number;
  application_fee: null;
  balance_transaction: string | null;
  billing_details: PaymentMethod['billing_details'];
  captured: boolean;
  currency: string;
  customer: string | null;
  description: string | null;
  disputed: boolean;
  failure_code: string | null;
  failure_message: string | null;
  fraud_details: Record<string, never>;
  livemode: false;
  metadata: Record<string, string>;
  outcome: { network_status: string; reason: string | null; risk_level: 'normal'; seller_message: string; type: 'authorized' | 'issuer_declined' };
  paid: boolean;
  payment_intent: string | null;
  payment_method: string;
  payment_method_details: { card: { brand: string; last4: string; exp_month: number; exp_year: number; country: string; network: string }; type: 'card' };
  receipt_email: string | null;
  refunded: boolean;
  status: 'succeeded' | 'pending' | 'failed';
  transfer_group: string | null;
}

export interface ChargeInput {
  amount: number;
  currency: string;
  paymentIntent: string;
  method: PaymentMethod;
  card: TestCard;
  capture: boolean;
  customer: string | null;
  description: string | null;
  metadata: Record<string, string>;
  receiptEmail: string | null;
  transferGroup: string | null;
}

export interface Charges {
  readonly collection: Collection<Charge>;
  /** Fetches a charge or throws Stripe's 404, naming `param` as the offending parameter. */
  require(id: string, param?: string): Charge;
  /** Authorises (and unless manual capture, captures) a payment; declined test cards yield a failed charge. */
  create(input: ChargeInput, origin: EventOrigin): Charge;
  capture(charge: Charge, amount: number, origin: EventOrigin): void;
  /** The amount that can still be refunded. */
  remainder(charge: Charge): number;
  routes: Route[];
}

export function createCharges(core: Core, ledger: BalanceTransactions): Charges {
  const { store, clock, events } = core;
  const collection = store.collection<Charge>('charge');

  const require = (id: string, param = 'id'): Charge => requireObject(collection, 'charge', id, param);

  const settle = (charge: Charge, amount: number): void => {
    charge.balance_transaction = ledger.record({ amount, currency: charge.currency, source: charge.id, type: 'charge', reportingCategory: 'charge' }).id;
  };

  const create = (input: ChargeInput, origin: EventOrigin): Charge => {
    const declined = input.card.decline !== null;
    const charge = collection.insert({
      id: newId('ch'),
      object: 'charge',
      amount: input.amount,
      amount_captured: declined || !input.capture ? 0 : input.amount,
      amount_refunded: 0,
      application_fee: null,
      balance_transaction: null,
      billing_details: input.method.billing_details,
      captured: !declined && input.capture,
      created: clock.nowSeconds(),
      currency: input.currency,
      customer: input.customer,
      description: input.description,
      disputed: false,
      failure_code: declined ? 'card_declined' : null,
      failure_message: declined ? 'Your card was declined.' : null,
      fraud_details: {},
      livemode: false,
      metadata: input.metadata,
      outcome: declined
        ? { network_status: 'declined_by_network', reason: input.card.decline, risk_level: 'normal', seller_message: 'The bank did not return any further details with this decline.', type: 'issuer_declined' }
        : { network_status: 'approved_by_network', reason: null, risk_level: 'normal', seller_message: 'Payment complete.', type: 'authorized' },
      paid: !declined,
      payment_intent: input.paymentIntent,
      payment_method: input.method.id,
      payment_method_details: {
        card: { brand: input.card.brand, last4: input.card.last4, exp_month: input.method.card.exp_month, exp_year: input.method.card.exp_year, country: 'US', network: input.card.brand },
        type: 'card',
      },
      receipt_email: input.receiptEmail,
      refunded: false,
      status: declined ? 'failed' : 'succeeded',
      transfer_group: input.transferGroup,
    });
    if (declined) {
      events.emit('charge.failed', charge, origin);
      return charge;
    }
    if (input.capture) settle(charge, input.amount);
    events.emit('charge.succeeded', charge, origin);
    return charge;
  };

  const capture = (charge: Charge, amount: number, origin: EventOrigin): void => {
    const before = snapshot(charge);
    charge.captured = true;
    charge.amount_captured = amount;
    // Capturing less than authorised releases the rest, which Stripe reports as refunded.
    charge.amount_refunded = charge.amount - amount;
    settle(charge, amount);
    events.emit('charge.captured', charge, origin, { before });
  };

  const routes = [
    route({
      method: 'GET',
      path: '/v1/charges/:id',
      params: {},
      handle: (_params, path) => require(path['id'] ?? ''),
    }),
    route({
      method: 'POST',
      path: '/v1/charges/:id',
      params: { metadata: metadata(), description: str(), receipt_email: str(), transfer_group: str() },
      handle: (params, path, ctx) => {
        const charge = require(path['id'] ?? '');
        const before = snapshot(charge);
        charge.metadata = mergeMetadata(charge.metadata, params.metadata);
        if (params.description !== undefined) charge.description = params.description;
        if (params.receipt_email !== undefined) charge.receipt_email = params.receipt_email;
        if (params.transfer_group !== undefined) charge.transfer_group = params.transfer_group;
        events.emit('charge.updated', charge, ctx.origin, { before });
        return charge;
      },
    }),
    route({
      method: 'GET',
      path: '/v1/charges',
      params: { ...listParams, payment_intent: str(), customer: str(), transfer_group: str() },
      handle: (params) => {
        const items = collection
          .newestFirst()
          .filter(
            (c) =>
              (params.payment_intent === undefined || c.payment_intent === params.payment_intent) &&
              (params.customer === undefined || c.customer === params.customer) &&
              (params.transfer_group === undefined || c.transfer_group === params.transfer_group),
          );
        return paginate(items, params, '/v1/charges');
      },
    }),
  ];

  return { collection, require, create, capture, remainder: (charge) => charge.amount - charge.amount_refunded, routes };
}
