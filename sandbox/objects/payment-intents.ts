// PaymentIntents: created, confirmed with a (test) payment method, optionally captured later. Confirmation
// makes the charge; a test card's promised disputes are scheduled from confirmation, or from capture when the
// intent uses manual capture (scenarios.md §2.7: no dispute while the charge is only authorised).
import { snapshot } from '../core/diff.js';
import { invalidRequest, requireObject, SandboxError } from '../core/errors.js';
import { newClientSecretSuffix, newId } from '../core/ids.js';
import { listParams, paginate, requireFilterIds } from '../core/list.js';
import { formatGroupedAmount, fractionalAmountRefusal, MAX_CHARGE_AMOUNT, MIN_CHARGE_AMOUNT } from '../core/money.js';
import { accepted, bool, currency, int, mergeMetadata, metadata, object, oneOf, required, str, strList } from '../core/params.js';
import { route } from '../http/router.js';
import type { Core } from '../core/core.js';
import type { EventOrigin } from '../core/event-bus.js';
import type { ParamValue } from '../core/form.js';
import type { Parsed } from '../core/params.js';
import type { Collection, StripeObject } from '../core/store.js';
import type { Route } from '../http/router.js';
import type { Charges } from './charges.js';
import type { Disputes } from './disputes.js';
import type { PaymentMethods } from './payment-methods.js';

export const paymentIntentStatuses = [
  'requires_payment_method', 'requires_confirmation', 'requires_action', 'processing', 'requires_capture', 'canceled', 'succeeded',
] as const;
export type PaymentIntentStatus = (typeof paymentIntentStatuses)[number];

const captureMethods = ['automatic', 'automatic_async', 'manual'] as const;
const cancellationReasons = ['duplicate', 'fraudulent', 'requested_by_customer', 'abandoned'] as const;

export interface PaymentIntent extends StripeObject {
  object: 'payment_intent';
  allowed_payment_method_types: null;
  amount: number;
  amount_capturable: number;
  amount_received: number;
  application: null;
  application_fee_amount: number | null;
  automatic_payment_methods: { enabled: boolean; allow_redirects?: 'always' | 'never' } | null;
  canceled_at: number | null;
  cancellation_reason: (typeof cancellationReasons)[number] | null;
  capture_method: (typeof captureMethods)[number];
  client_secret: string;
  confirmation_method: 'automatic' | 'manual';
  currency: string;
  customer: string | null;
  customer_account: null;
  description: string | null;
  excluded_payment_method_types: null;
  last_payment_error: { code: string; decline_code: string; message: string; type: 'card_error'; charge: string } | null;
  latest_charge: string | null;
  livemode: false;
  managed_payments: null;
  metadata: Record<string, string>;
  next_action: null;
  on_behalf_of: null;
  payment_method: string | null;
  payment_method_configuration_details: null;
  payment_method_options: { card: { installments: null; mandate_options: null; network: null; request_three_d_secure: 'automatic' } };
  payment_method_types: string[];
  payment_record: null;
  processing: null;
  receipt_email: string | null;
  review: null;
  setup_future_usage: 'on_session' | 'off_session' | null;
  /** Stored as given (`name`, `address`, ...): the sandbox does not model shipping beyond echoing it. */
  shipping: { address: Record<string, string | null>; carrier: string | null; name: string; phone: string | null; tracking_number: string | null } | null;
  source: null;
  statement_descriptor: string | null;
  statement_descriptor_suffix: string | null;
  status: PaymentIntentStatus;
  transfer_data: null;
  transfer_group: string | null;
}

const confirmParams = {
  payment_method: str(),
  return_url: str(),
  off_session: str(),
  receipt_email: str(),
  setup_future_usage: oneOf(['on_session', 'off_session']),
  capture_method: oneOf(captureMethods),
  error_on_requires_action: bool(),
  use_stripe_sdk: bool(),
  payment_method_options: accepted(),
  payment_method_data: accepted(),
  mandate_data: accepted(),
  shipping: accepted(),
};

const createParams = {
  ...confirmParams,
  amount: required(int({ min: 1 })),
  currency: required(currency()),
  confirm: bool(),
  metadata: metadata(),
  description: str(),
  transfer_group: str(),
  customer: str(),
  payment_method_types: strList(),
  automatic_payment_methods: object({ enabled: required(bool()), allow_redirects: oneOf(['always', 'never']) }),
  confirmation_method: oneOf(['automatic', 'manual']),
  statement_descriptor: str({ maxLength: 22 }),
  statement_descriptor_suffix: str({ maxLength: 22 }),
  on_behalf_of: str(),
  application_fee_amount: int({ min: 0 }),
  transfer_data: accepted(),
};

const updateParams = {
  amount: int({ min: 1 }),
  currency: currency(),
  metadata: metadata(),
  description: str(),
  transfer_group: str(),
  customer: str(),
  payment_method: str(),
  receipt_email: str(),
  capture_method: oneOf(captureMethods),
  setup_future_usage: oneOf(['on_session', 'off_session']),
  statement_descriptor: str({ maxLength: 22 }),
  payment_method_types: strList(),
  payment_method_options: accepted(),
  shipping: accepted(),
};

export interface PaymentIntentDeps {
  charges: Charges;
  methods: PaymentMethods;
  disputes: Disputes;
}

export interface OffSessionPayment {
  amount: number;
  currency: string;
  customer: string;
  paymentMethod: string;
  description: string;
}

export interface PaymentIntents {
  readonly collection: Collection<PaymentIntent>;
  require(id: string, param?: string): PaymentIntent;
  /** Creates and confirms a payment as an invoice collects it; a declined card throws Stripe's 402. */
  collect(payment: OffSessionPayment, origin: EventOrigin): PaymentIntent;
  routes: Route[];
}

/** `shipping[name]`, `shipping[address][line1]`, ... as Stripe returns them: every field present, null when not sent. */
function shippingOf(value: ParamValue | undefined): PaymentIntent['shipping'] {
  if (value === undefined || typeof value === 'string' || Array.isArray(value)) return null;
  const text = (v: ParamValue | undefined): string | null => (typeof v === 'string' && v !== '' ? v : null);
  const address = value['address'];
  const lines = address !== undefined && typeof address !== 'string' && !Array.isArray(address) ? address : {};
  return {
    address: Object.fromEntries(['city', 'country', 'line1', 'line2', 'postal_code', 'state'].map((k) => [k, text(lines[k])])),
    carrier: text(value['carrier']),
    name: text(value['name']) ?? '',
    phone: text(value['phone']),
    tracking_number: text(value['tracking_number']),
  };
}

/**
 * Stripe's refusal of a payment amount outside what it charges (stripe-facts §2 codes; the too-large message as
 * stateful-mock has it, §4.5; the too-small one as Stripe words it, `Amount must be at least $0.50 usd`), or in a
 * fraction of the unit its currency is charged in (fractional ISK, core/money.ts). Null: chargeable. Only the API is
 * refused; an invoice's own collection (`collect`) is not checked here.
 */
function amountRefusal(amount: number, currency: string): SandboxError | null {
  const code = currency.toLowerCase();
  if (amount < MIN_CHARGE_AMOUNT) {
    return invalidRequest(`Amount must be at least ${formatGroupedAmount(MIN_CHARGE_AMOUNT, code)} ${code}`, { code: 'amount_too_small', param: 'amount' });
  }
  if (amount > MAX_CHARGE_AMOUNT) {
    return invalidRequest(`Amount must be no more than ${formatGroupedAmount(MAX_CHARGE_AMOUNT, code)}`, { code: 'amount_too_large', param: 'amount' });
  }
  return fractionalAmountRefusal(amount, code, 'amount');
}

function unexpectedState(message: string): SandboxError {
  return invalidRequest(message, { code: 'payment_intent_unexpected_state' });
}

export function createPaymentIntents(core: Core, deps: PaymentIntentDeps): PaymentIntents {
  const { store, clock, events } = core;
  const { charges, methods, disputes } = deps;
  const collection = store.collection<PaymentIntent>('payment_intent');

  const require = (id: string, param = 'intent'): PaymentIntent => requireObject(collection, 'payment_intent', id, param);

  const confirm = (intent: PaymentIntent, params: Parsed<typeof confirmParams>, origin: EventOrigin): PaymentIntent => {
    if (!['requires_payment_method', 'requires_confirmation', 'requires_action'].includes(intent.status)) {
      throw unexpectedState(
        `You cannot confirm this PaymentIntent because it has a status of ${intent.status}. Only a PaymentIntent with one of the following statuses may be confirmed: requires_payment_method, requires_confirmation, requires_action.`,
      );
    }
    const methodId = params.payment_method ?? intent.payment_method;
    if (methodId === null) {
      throw unexpectedState(
        "You cannot confirm this PaymentIntent because it's missing a payment method. You can either update the PaymentIntent with a payment method and then confirm it again, or confirm it again directly with a payment method.",
      );
    }
    const { method, card } = methods.resolve(methodId, 'payment_method');
    if (params.capture_method !== undefined) intent.capture_method = params.capture_method;
    if (params.receipt_email !== undefined) intent.receipt_email = params.receipt_email;
    if (params.setup_future_usage !== undefined) intent.setup_future_usage = params.setup_future_usage;
    intent.payment_method = method.id;
    const capture = intent.capture_method !== 'manual';
    const charge = charges.create(
      {
        amount: intent.amount,
        currency: intent.currency,
        paymentIntent: intent.id,
        method,
        card,
        capture,
        customer: intent.customer,
        description: intent.description,
        metadata: { ...intent.metadata },
        receiptEmail: intent.receipt_email,
        transferGroup: intent.transfer_group,
        statementDescriptor: intent.statement_descriptor,
        statementDescriptorSuffix: intent.statement_descriptor_suffix,
      },
      origin,
    );
    intent.latest_charge = charge.id;
    if (charge.status === 'failed') {
      const error = { code: 'card_declined', decline_code: card.decline ?? 'generic_decline', message: 'Your card was declined.', type: 'card_error' as const, charge: charge.id };
      intent.status = 'requires_payment_method';
      intent.last_payment_error = error;
      events.emit('payment_intent.payment_failed', intent, origin);
      throw new SandboxError(402, { ...error, payment_intent: snapshot(intent) });
    }
    intent.last_payment_error = null;
    if (capture) {
      // Stripe's recorded order: charge.succeeded, charge.dispute.created, payment_intent.succeeded.
      disputes.openForTestCard(charge, card, 'confirm');
      intent.status = 'succeeded';
      intent.amount_received = intent.amount;
      events.emit('payment_intent.succeeded', intent, origin);
    } else {
      intent.status = 'requires_capture';
      intent.amount_capturable = intent.amount;
      events.emit('payment_intent.amount_capturable_updated', intent, origin);
    }
    return intent;
  };

  const create = (params: Parsed<typeof createParams>, origin: EventOrigin): PaymentIntent => {
    const id = newId('pi');
    const intent = collection.insert({
      id,
      object: 'payment_intent',
      allowed_payment_method_types: null,
      amount: params.amount,
      amount_capturable: 0,
      amount_received: 0,
      application: null,
      application_fee_amount: params.application_fee_amount ?? null,
      automatic_payment_methods: params.payment_method_types === undefined ? (params.automatic_payment_methods ?? { enabled: true }) : null,
      canceled_at: null,
      cancellation_reason: null,
      capture_method: params.capture_method ?? 'automatic_async',
      client_secret: `${id}_${newClientSecretSuffix()}`,
      confirmation_method: params.confirmation_method ?? 'automatic',
      created: clock.nowSeconds(),
      currency: params.currency.toLowerCase(),
      customer: params.customer ?? null,
      customer_account: null,
      description: params.description ?? null,
      excluded_payment_method_types: null,
      last_payment_error: null,
      latest_charge: null,
      livemode: false,
      managed_payments: null,
      metadata: mergeMetadata({}, params.metadata),
      next_action: null,
      on_behalf_of: null,
      payment_method: null,
      payment_method_configuration_details: null,
      payment_method_options: { card: { installments: null, mandate_options: null, network: null, request_three_d_secure: 'automatic' } },
      payment_method_types: params.payment_method_types ?? ['card'],
      payment_record: null,
      processing: null,
      receipt_email: params.receipt_email ?? null,
      review: null,
      setup_future_usage: params.setup_future_usage ?? null,
      shipping: shippingOf(params.shipping),
      source: null,
      statement_descriptor: params.statement_descriptor ?? null,
      statement_descriptor_suffix: params.statement_descriptor_suffix ?? null,
      status: params.payment_method === undefined ? 'requires_payment_method' : 'requires_confirmation',
      transfer_data: null,
      transfer_group: params.transfer_group ?? null,
    });
    if (params.payment_method !== undefined && params.confirm !== true) {
      intent.payment_method = methods.resolve(params.payment_method, 'payment_method').method.id;
    }
    events.emit('payment_intent.created', intent, origin);
    return params.confirm === true ? confirm(intent, params, origin) : intent;
  };

  const capture = (intent: PaymentIntent, amount: number | undefined, origin: EventOrigin): PaymentIntent => {
    if (intent.status !== 'requires_capture' || intent.latest_charge === null) {
      throw unexpectedState(
        `This PaymentIntent could not be captured because it has a status of ${intent.status}. Only a PaymentIntent with one of the following statuses may be captured: requires_capture.`,
      );
    }
    const toCapture = amount ?? intent.amount_capturable;
    if (toCapture > intent.amount_capturable) {
      throw invalidRequest(`The amount_to_capture (${toCapture}) is greater than the amount capturable (${intent.amount_capturable}).`, { param: 'amount_to_capture' });
    }
    // The captured amount is what is charged, so the whole-króna rule is taken to hold for it too (inferred: Stripe's
    // article names Charges and PaymentIntents, not this parameter; core/money.ts).
    const fractional = fractionalAmountRefusal(toCapture, intent.currency, 'amount_to_capture');
    if (fractional !== null) throw fractional;
    const charge = charges.require(intent.latest_charge);
    charges.capture(charge, toCapture, origin);
    disputes.openForTestCard(charge, methods.cardOf(charge.payment_method), 'capture');
    intent.status = 'succeeded';
    intent.amount_received = toCapture;
    intent.amount_capturable = 0;
    events.emit('payment_intent.succeeded', intent, origin);
    return intent;
  };

  const cancel = (intent: PaymentIntent, reason: PaymentIntent['cancellation_reason'] | undefined, origin: EventOrigin): PaymentIntent => {
    const cancellable = ['requires_payment_method', 'requires_capture', 'requires_confirmation', 'requires_action', 'processing'];
    if (!cancellable.includes(intent.status)) {
      throw unexpectedState(
        `You cannot cancel this PaymentIntent because it has a status of ${intent.status}. Only a PaymentIntent with one of the following statuses may be canceled: ${cancellable.join(', ')}.`,
      );
    }
    if (intent.status === 'requires_capture' && intent.latest_charge !== null) {
      // Cancelling an authorisation releases it; Stripe reports the released amount as refunded.
      const charge = charges.require(intent.latest_charge);
      const before = snapshot(charge);
      charge.amount_refunded = charge.amount;
      charge.refunded = true;
      events.emit('charge.refunded', charge, origin, { before });
    }
    intent.status = 'canceled';
    intent.amount_capturable = 0;
    intent.canceled_at = clock.nowSeconds();
    intent.cancellation_reason = reason ?? null;
    events.emit('payment_intent.canceled', intent, origin);
    return intent;
  };

  const update = (intent: PaymentIntent, params: Parsed<typeof updateParams>): PaymentIntent => {
    const settled = intent.status === 'succeeded' || intent.status === 'canceled';
    if (settled && (params.amount !== undefined || params.currency !== undefined || params.payment_method !== undefined)) {
      throw unexpectedState(`This PaymentIntent's amount, currency or payment_method could not be updated because it has a status of ${intent.status}.`);
    }
    if (params.amount !== undefined || params.currency !== undefined) {
      const refused = amountRefusal(params.amount ?? intent.amount, params.currency ?? intent.currency);
      if (refused !== null) throw refused;
    }
    const merged = mergeMetadata(intent.metadata, params.metadata);
    if (params.amount !== undefined) intent.amount = params.amount;
    if (params.currency !== undefined) intent.currency = params.currency.toLowerCase();
    if (params.payment_method !== undefined) {
      intent.payment_method = methods.resolve(params.payment_method, 'payment_method').method.id;
      intent.status = 'requires_confirmation';
    }
    intent.metadata = merged;
    if (params.description !== undefined) intent.description = params.description;
    if (params.transfer_group !== undefined) intent.transfer_group = params.transfer_group;
    if (params.customer !== undefined) intent.customer = params.customer;
    if (params.receipt_email !== undefined) intent.receipt_email = params.receipt_email;
    if (params.capture_method !== undefined) intent.capture_method = params.capture_method;
    if (params.setup_future_usage !== undefined) intent.setup_future_usage = params.setup_future_usage;
    if (params.statement_descriptor !== undefined) intent.statement_descriptor = params.statement_descriptor;
    if (params.shipping !== undefined) intent.shipping = shippingOf(params.shipping);
    if (params.payment_method_types !== undefined) intent.payment_method_types = params.payment_method_types;
    return intent;
  };

  const routes = [
    route({
      method: 'POST',
      path: '/v1/payment_intents',
      params: createParams,
      handle: (params, _path, ctx) => {
        const refused = amountRefusal(params.amount, params.currency);
        if (refused !== null) throw refused;
        return create(params, ctx.origin);
      },
    }),
    route({ method: 'GET', path: '/v1/payment_intents/:id', params: { client_secret: str() }, handle: (_params, path) => require(path['id'] ?? '') }),
    route({ method: 'POST', path: '/v1/payment_intents/:id', params: updateParams, handle: (params, path) => update(require(path['id'] ?? ''), params) }),
    route({
      method: 'POST',
      path: '/v1/payment_intents/:id/confirm',
      params: confirmParams,
      handle: (params, path, ctx) => confirm(require(path['id'] ?? ''), params, ctx.origin),
    }),
    route({
      method: 'POST',
      path: '/v1/payment_intents/:id/capture',
      params: { amount_to_capture: int({ min: 1 }), metadata: metadata(), application_fee_amount: int({ min: 0 }), statement_descriptor: str() },
      handle: (params, path, ctx) => {
        const intent = require(path['id'] ?? '');
        intent.metadata = mergeMetadata(intent.metadata, params.metadata);
        return capture(intent, params.amount_to_capture, ctx.origin);
      },
    }),
    route({
      method: 'POST',
      path: '/v1/payment_intents/:id/cancel',
      params: { cancellation_reason: oneOf(cancellationReasons) },
      handle: (params, path, ctx) => cancel(require(path['id'] ?? ''), params.cancellation_reason, ctx.origin),
    }),
    route({
      method: 'GET',
      path: '/v1/payment_intents',
      params: { ...listParams, customer: str() },
      handle: (params) => {
        requireFilterIds(store, { customer: params.customer });
        return paginate(collection.newestFirst().filter((pi) => params.customer === undefined || pi.customer === params.customer), params, '/v1/payment_intents');
      },
    }),
  ];

  const collect = (payment: OffSessionPayment, origin: EventOrigin): PaymentIntent =>
    create(
      { amount: payment.amount, currency: payment.currency, customer: payment.customer, payment_method: payment.paymentMethod, description: payment.description, confirm: true, off_session: 'true' },
      origin,
    );

  return { collection, require, collect, routes };
}
