// Charges: made by confirming a PaymentIntent, never created directly here. They carry the running refund total
// (`amount_refunded`, `refunded` once fully refunded) and `disputed`, which stays true once any dispute opened.
import { snapshot } from '../core/diff.js';
import { requireObject } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { listParams, paginate, requireFilterIds } from '../core/list.js';
import { mergeMetadata, metadata, str } from '../core/params.js';
import { route } from '../http/router.js';
import type { Core } from '../core/core.js';
import type { EventOrigin } from '../core/event-bus.js';
import type { Collection, StripeObject } from '../core/store.js';
import type { Route } from '../http/router.js';
import type { BalanceTransactions } from './balance-transactions.js';
import type { PaymentMethod, TestCard } from './payment-methods.js';

/** A card charge's `payment_method_details.card`; the fields Stripe fills only for other flows are null. */
export interface ChargeCard {
  amount_authorized: number | null;
  authorization_code: string | null;
  brand: string;
  checks: { address_line1_check: null; address_postal_code_check: null; cvc_check: 'pass' } | null;
  country: string;
  electronic_commerce_indicator: null;
  exp_month: number;
  exp_year: number;
  funding: 'credit';
  installments: null;
  last4: string;
  mandate: null;
  network: string;
  network_transaction_id: string | null;
  regulated_status: 'unregulated';
  three_d_secure: null;
  transaction_link_id: null;
  wallet: null;
}

export interface Charge extends StripeObject {
  object: 'charge';
  amount: number;
  amount_captured: number;
  amount_refunded: number;
  application: null;
  application_fee: null;
  application_fee_amount: null;
  balance_transaction: string | null;
  billing_details: PaymentMethod['billing_details'];
  calculated_statement_descriptor: string | null;
  captured: boolean;
  currency: string;
  customer: string | null;
  description: string | null;
  disputed: boolean;
  failure_balance_transaction: null;
  failure_code: string | null;
  failure_message: string | null;
  fraud_details: Record<string, never>;
  livemode: false;
  metadata: Record<string, string>;
  on_behalf_of: null;
  outcome: {
    advice_code: 'try_again_later' | null;
    network_advice_code: null;
    network_decline_code: null;
    network_status: string;
    reason: string | null;
    risk_level: 'normal';
    risk_score: number;
    seller_message: string;
    type: 'authorized' | 'issuer_declined';
  };
  paid: boolean;
  payment_intent: string | null;
  payment_method: string;
  payment_method_details: { card: ChargeCard; type: 'card' };
  receipt_email: string | null;
  receipt_number: null;
  receipt_url: string;
  refunded: boolean;
  review: null;
  shipping: null;
  source: null;
  source_transfer: null;
  statement_descriptor: string | null;
  statement_descriptor_suffix: string | null;
  status: 'succeeded' | 'pending' | 'failed';
  transfer_data: null;
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
  statementDescriptor: string | null;
  statementDescriptorSuffix: string | null;
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
    const id = newId('ch');
    const charge = collection.insert({
      id,
      object: 'charge',
      amount: input.amount,
      amount_captured: declined || !input.capture ? 0 : input.amount,
      amount_refunded: 0,
      application: null,
      application_fee: null,
      application_fee_amount: null,
      balance_transaction: null,
      billing_details: input.method.billing_details,
      calculated_statement_descriptor: declined ? null : (input.statementDescriptor ?? 'INTERLOCK SANDBOX'),
      captured: !declined && input.capture,
      created: clock.nowSeconds(),
      currency: input.currency,
      customer: input.customer,
      description: input.description,
      disputed: false,
      failure_balance_transaction: null,
      failure_code: declined ? 'card_declined' : null,
      failure_message: declined ? 'Your card was declined.' : null,
      fraud_details: {},
      livemode: false,
      metadata: input.metadata,
      on_behalf_of: null,
      outcome: {
        advice_code: declined ? 'try_again_later' : null,
        network_advice_code: null,
        network_decline_code: null,
        ...(declined
          ? { network_status: 'declined_by_network', reason: input.card.decline, seller_message: 'The bank did not return any further details with this decline.', type: 'issuer_declined' as const }
          : { network_status: 'approved_by_network', reason: null, seller_message: 'Payment complete.', type: 'authorized' as const }),
        risk_level: 'normal',
        risk_score: 32,
      },
      paid: !declined,
      payment_intent: input.paymentIntent,
      payment_method: input.method.id,
      payment_method_details: {
        card: {
          amount_authorized: declined ? null : input.amount,
          authorization_code: declined ? null : '123456',
          brand: input.card.brand,
          checks: { address_line1_check: null, address_postal_code_check: null, cvc_check: 'pass' },
          country: 'US',
          electronic_commerce_indicator: null,
          exp_month: input.method.card.exp_month,
          exp_year: input.method.card.exp_year,
          funding: 'credit',
          installments: null,
          last4: input.card.last4,
          mandate: null,
          network: input.card.brand,
          network_transaction_id: declined ? null : '1234567890123456',
          regulated_status: 'unregulated',
          three_d_secure: null,
          transaction_link_id: null,
          wallet: null,
        },
        type: 'card',
      },
      receipt_email: input.receiptEmail,
      receipt_number: null,
      receipt_url: `https://pay.stripe.com/receipts/payment/${id}`,
      refunded: false,
      review: null,
      shipping: null,
      source: null,
      source_transfer: null,
      statement_descriptor: input.statementDescriptor,
      statement_descriptor_suffix: input.statementDescriptorSuffix,
      status: declined ? 'failed' : 'succeeded',
      transfer_data: null,
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
        requireFilterIds(store, { payment_intent: params.payment_intent, customer: params.customer });
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
