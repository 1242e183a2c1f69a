// Refunds and their state machine (stripe-facts §4):
//   pending ──settle──▶ succeeded ──fail──▶ failed          (money back to the merchant, failure txn)
//   pending ──fail──▶ failed     pending ──needs action──▶ requires_action ──cancel/expire──▶ canceled
// The charge's `amount_refunded` counts every refund that is not failed or canceled. Test cards choose the path
// (`pm_card_pendingRefund`, `pm_card_refundFail`), and a chargeback posting fails refunds younger than
// `settings.pendingRefundDisputeWindowSeconds` with `charge_for_pending_refund_disputed` (scenarios.md §2.7).
import { previousAttributes, snapshot } from '../core/diff.js';
import { automatic } from '../core/event-bus.js';
import { invalidRequest, requireObject, resourceMissing } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { listParams, paginate, requireFilterIds } from '../core/list.js';
import { formatAmount, fractionalAmountRefusal } from '../core/money.js';
import { bool, currency, int, mergeMetadata, metadata, oneOf, str } from '../core/params.js';
import { route } from '../http/router.js';
import type { Core } from '../core/core.js';
import type { EventOrigin } from '../core/event-bus.js';
import type { Parsed } from '../core/params.js';
import type { Collection, StripeObject } from '../core/store.js';
import type { VirtualExpansion } from '../http/expand.js';
import type { Route } from '../http/router.js';
import type { BalanceTransactions } from './balance-transactions.js';
import type { Charge, Charges } from './charges.js';
import type { PaymentMethods } from './payment-methods.js';

export const refundStatuses = ['pending', 'requires_action', 'succeeded', 'failed', 'canceled'] as const;
export type RefundStatus = (typeof refundStatuses)[number];

export const refundFailureReasons = [
  'lost_or_stolen_card',
  'expired_or_canceled_card',
  'charge_for_pending_refund_disputed',
  'insufficient_funds',
  'declined',
  'merchant_request',
  'unknown',
] as const;
export type RefundFailureReason = (typeof refundFailureReasons)[number];

export const refundReasons = ['duplicate', 'fraudulent', 'requested_by_customer'] as const;

export interface Refund extends StripeObject {
  object: 'refund';
  amount: number;
  balance_transaction: string | null;
  charge: string;
  currency: string;
  customer: string | null;
  customer_account: null;
  description?: string;
  /** `reference` (the acquirer reference number) appears only once the card network has one; the sandbox never has. */
  destination_details: { card: { reference?: string; reference_status: string; reference_type: string; type: 'refund' }; type: 'card' };
  failure_balance_transaction?: string;
  failure_reason?: RefundFailureReason;
  metadata: Record<string, string>;
  next_action?: { type: 'display_details'; display_details: { email_sent: { email_sent_at: number; email_sent_to: string }; expires_at: number } };
  payment_intent: string | null;
  payment_method: string;
  pending_reason?: 'processing' | 'insufficient_funds' | 'charge_pending';
  reason: (typeof refundReasons)[number] | null;
  receipt_number: string | null;
  source_transfer_reversal: null;
  status: RefundStatus;
  transfer_reversal: null;
}

/** The states in which the refund's money has left the merchant's balance. */
const moneyOut: ReadonlySet<RefundStatus> = new Set(['pending', 'requires_action', 'succeeded']);

export interface RefundDeps {
  charges: Charges;
  ledger: BalanceTransactions;
  methods: PaymentMethods;
  /** False once a chargeback holds the charge's funds (a dispute with `is_charge_refundable: false`). */
  isChargeRefundable(charge: Charge): boolean;
}

export interface Refunds {
  readonly collection: Collection<Refund>;
  require(id: string): Refund;
  /** Issues a refund as `POST /v1/refunds` would, bar the fractional-ISK refusal, for families that refund on their own (credit notes). */
  create(params: RefundCreateParams, origin: EventOrigin): Refund;
  settle(refund: Refund, origin: EventOrigin): void;
  fail(refund: Refund, reason: RefundFailureReason, origin: EventOrigin): void;
  requireAction(refund: Refund, origin: EventOrigin): void;
  /** Called when a chargeback posts: refunds inside the window fail, older ones stand. */
  failRecentOnChargeback(charge: Charge): void;
  routes: Route[];
  expansions: ReadonlyArray<readonly [string, VirtualExpansion]>;
}

const createParams = {
  amount: int({ min: 1 }),
  charge: str(),
  payment_intent: str(),
  reason: oneOf(refundReasons),
  metadata: metadata(),
  currency: currency(),
  customer: str(),
  instructions_email: str(),
  origin: oneOf(['customer_balance']),
  refund_application_fee: bool(),
  reverse_transfer: bool(),
};
export type RefundCreateParams = Parsed<typeof createParams>;
type CreateParams = RefundCreateParams;

export function createRefunds(core: Core, deps: RefundDeps): Refunds {
  const { store, clock, events, settings } = core;
  const { charges, ledger, methods } = deps;
  const collection = store.collection<Refund>('refund');

  const require = (id: string): Refund => requireObject(collection, 'refund', id);

  const chargeToRefund = (params: CreateParams): Charge => {
    if (params.charge !== undefined) {
      // Only money that was taken comes back: a declined charge has nothing to refund, by id as by PaymentIntent.
      const charge = charges.require(params.charge);
      if (charge.status !== 'succeeded') throw invalidRequest(`Charge ${charge.id} has a status of ${charge.status}; only a successful charge can be refunded.`);
      return charge;
    }
    const intent = params.payment_intent ?? '';
    if (store.find(intent)?.object !== 'payment_intent') throw resourceMissing('payment_intent', intent, 'payment_intent');
    const succeeded = charges.collection.newestFirst().find((c) => c.payment_intent === intent && c.status === 'succeeded');
    if (succeeded === undefined) throw invalidRequest(`This PaymentIntent (${intent}) does not have a successful charge to refund.`);
    return succeeded;
  };

  const moveChargeTotal = (charge: Charge, delta: number, origin: EventOrigin, type: 'charge.refunded' | 'charge.updated'): void => {
    const before = snapshot(charge);
    charge.amount_refunded += delta;
    charge.refunded = charge.amount_refunded >= charge.amount;
    events.emit(type, charge, origin, { before });
  };

  /**
   * `fromApi`: a refund asked for through the refund routes, which Stripe refuses in fractional ISK, the whole
   * remainder of an older fractional charge included (core/money.ts). A credit note's refund is not checked: Stripe
   * documents the rule for refunds and charges, not for credit notes.
   */
  const create = (params: CreateParams, origin: EventOrigin, fromApi: boolean): Refund => {
    const charge = chargeToRefund(params);
    if (!deps.isChargeRefundable(charge)) {
      throw invalidRequest(`Charge ${charge.id} has been charged back; cannot issue a refund.`, { code: 'charge_disputed' });
    }
    if (charge.refunded) throw invalidRequest(`Charge ${charge.id} has already been refunded.`, { code: 'charge_already_refunded' });
    const remainder = charges.remainder(charge);
    const amount = params.amount ?? remainder;
    const fractional = fromApi ? fractionalAmountRefusal(amount, charge.currency, 'amount') : null;
    if (fractional !== null) throw fractional;
    if (!charge.captured && amount !== remainder) {
      throw invalidRequest(
        'You cannot partially refund an uncaptured charge. Instead, capture the charge for an amount less than the original amount',
        { param: 'amount' },
      );
    }
    if (amount > remainder) {
      const message = `Refund amount (${formatAmount(amount, charge.currency)}) is greater than unrefunded amount on charge (${formatAmount(remainder, charge.currency)})`;
      throw invalidRequest(message, { param: 'amount' });
    }
    const card = methods.cardOf(charge.payment_method);
    const pending = card.refund === 'pending_then_succeeds';
    const refund = collection.insert({
      id: newId('re'),
      object: 'refund',
      amount,
      balance_transaction: null,
      charge: charge.id,
      created: clock.nowSeconds(),
      currency: charge.currency,
      customer: charge.customer,
      customer_account: null,
      destination_details: { card: { reference_status: 'pending', reference_type: 'acquirer_reference_number', type: 'refund' }, type: 'card' },
      metadata: mergeMetadata({}, params.metadata),
      payment_intent: charge.payment_intent,
      payment_method: charge.payment_method,
      ...(pending ? { pending_reason: 'processing' as const } : {}),
      reason: params.reason ?? null,
      receipt_number: null,
      source_transfer_reversal: null,
      status: pending ? 'pending' : 'succeeded',
      transfer_reversal: null,
    });
    if (charge.captured) {
      refund.balance_transaction = ledger.record({ amount: -amount, currency: charge.currency, source: refund.id, type: 'refund', reportingCategory: 'refund' }).id;
    }
    events.emit('refund.created', refund, origin);
    moveChargeTotal(charge, amount, origin, 'charge.refunded');
    if (pending) {
      clock.after('pendingRefundSettles', () => {
        if (refund.status === 'pending') settle(refund, automatic);
      });
    }
    if (card.refund === 'succeeds_then_fails') {
      clock.after('refundFailureArrives', () => {
        if (moneyOut.has(refund.status)) fail(refund, 'expired_or_canceled_card', automatic);
      });
    }
    return refund;
  };

  const announce = (refund: Refund, before: Refund, origin: EventOrigin): void => {
    events.emit('refund.updated', refund, origin, { before });
    events.emit('charge.refund.updated', refund, origin, { before });
  };

  const settle = (refund: Refund, origin: EventOrigin): void => {
    if (refund.status !== 'pending') throw invalidRequest(`Refund ${refund.id} is ${refund.status}; only a pending refund can settle.`);
    const before = snapshot(refund);
    refund.status = 'succeeded';
    delete refund.pending_reason;
    announce(refund, before, origin);
  };

  /** Ends a refund whose money is out without it reaching the customer: failed or canceled. */
  const returnMoney = (refund: Refund, to: 'failed' | 'canceled', origin: EventOrigin, reason?: RefundFailureReason): void => {
    if (!moneyOut.has(refund.status)) throw invalidRequest(`Refund ${refund.id} is already ${refund.status}.`);
    const charge = charges.require(refund.charge);
    const before = snapshot(refund);
    refund.status = to;
    delete refund.pending_reason;
    delete refund.next_action;
    if (to === 'failed') {
      refund.failure_reason = reason ?? 'unknown';
      refund.failure_balance_transaction = ledger.record({
        amount: refund.amount,
        currency: refund.currency,
        source: refund.id,
        type: 'refund_failure',
        reportingCategory: 'refund_failure',
      }).id;
    }
    announce(refund, before, origin);
    if (to === 'failed') events.emit('refund.failed', refund, origin, { before });
    moveChargeTotal(charge, -refund.amount, origin, 'charge.updated');
  };

  const fail = (refund: Refund, reason: RefundFailureReason, origin: EventOrigin): void => returnMoney(refund, 'failed', origin, reason);

  const requireAction = (refund: Refund, origin: EventOrigin): void => {
    if (refund.status !== 'pending' && refund.status !== 'succeeded') {
      throw invalidRequest(`Refund ${refund.id} is ${refund.status}; only a pending or succeeded refund can require action.`);
    }
    const before = snapshot(refund);
    const now = clock.nowSeconds();
    refund.status = 'requires_action';
    delete refund.pending_reason;
    refund.next_action = { type: 'display_details', display_details: { email_sent: { email_sent_at: now, email_sent_to: 'customer@example.com' }, expires_at: now + 45 * 86_400 } };
    announce(refund, before, origin);
  };

  const failRecentOnChargeback = (charge: Charge): void => {
    const now = clock.nowSeconds();
    for (const refund of collection.newestFirst()) {
      if (refund.charge !== charge.id || (refund.status !== 'succeeded' && refund.status !== 'pending')) continue;
      if (now - refund.created < settings.pendingRefundDisputeWindowSeconds) fail(refund, 'charge_for_pending_refund_disputed', automatic);
    }
  };

  const cancelFromRequiresAction = (refund: Refund, origin: EventOrigin): Refund => {
    if (refund.status !== 'requires_action') throw invalidRequest('Canceling this refund is unsupported.');
    returnMoney(refund, 'canceled', origin);
    return refund;
  };

  const listFor = (filter: { charge?: string; payment_intent?: string }): Refund[] =>
    collection
      .newestFirst()
      .filter((r) => (filter.charge === undefined || r.charge === filter.charge) && (filter.payment_intent === undefined || r.payment_intent === filter.payment_intent));

  const requireChargeOrIntent = (params: CreateParams): void => {
    if (params.charge === undefined && params.payment_intent === undefined) {
      throw invalidRequest('One of the following params should be provided for this request: payment_intent or charge.');
    }
  };

  const routes = [
    route({ method: 'POST', path: '/v1/refunds', params: createParams, check: requireChargeOrIntent, handle: (params, _path, ctx) => create(params, ctx.origin, true) }),
    route({ method: 'GET', path: '/v1/refunds/:id', params: {}, handle: (_params, path) => require(path['id'] ?? '') }),
    route({
      method: 'POST',
      path: '/v1/refunds/:id',
      params: { metadata: metadata() },
      handle: (params, path, ctx) => {
        const refund = require(path['id'] ?? '');
        const before = snapshot(refund);
        refund.metadata = mergeMetadata(refund.metadata, params.metadata);
        // Card refunds are among the "selected payment methods" whose updates also fire charge.refund.updated
        // (README: decisions), which is what Stripe's own `stripe trigger charge.refund.updated` fixture does. An
        // update that changes nothing is no update: no event.
        if (previousAttributes(before, refund) !== undefined) announce(refund, before, ctx.origin);
        return refund;
      },
    }),
    route({
      method: 'POST',
      path: '/v1/refunds/:id/cancel',
      params: {},
      handle: (_params, path, ctx) => cancelFromRequiresAction(require(path['id'] ?? ''), ctx.origin),
    }),
    route({
      method: 'POST',
      path: '/v1/test_helpers/refunds/:id/expire',
      params: {},
      handle: (_params, path, ctx) => cancelFromRequiresAction(require(path['id'] ?? ''), ctx.origin),
    }),
    route({
      method: 'GET',
      path: '/v1/refunds',
      params: { ...listParams, charge: str(), payment_intent: str() },
      handle: (params) => {
        requireFilterIds(store, { charge: params.charge, payment_intent: params.payment_intent });
        return paginate(listFor(params), params, '/v1/refunds');
      },
    }),
    route({
      method: 'GET',
      path: '/v1/charges/:charge/refunds',
      params: listParams,
      handle: (params, path) => {
        const charge = charges.require(path['charge'] ?? '', 'charge');
        return paginate(listFor({ charge: charge.id }), params, `/v1/charges/${charge.id}/refunds`);
      },
    }),
    route({
      method: 'GET',
      path: '/v1/charges/:charge/refunds/:id',
      params: {},
      handle: (_params, path) => {
        const refund = require(path['id'] ?? '');
        if (refund.charge !== path['charge']) throw resourceMissing('refund', refund.id);
        return refund;
      },
    }),
    route({
      method: 'POST',
      path: '/v1/charges/:charge/refunds',
      params: createParams,
      handle: (params, path, ctx) => create({ ...params, charge: path['charge'] ?? '' }, ctx.origin, true),
    }),
    route({
      method: 'POST',
      path: '/v1/charges/:charge/refund',
      params: createParams,
      // The legacy route answers with the charge, not the refund.
      handle: (params, path, ctx) => charges.require(create({ ...params, charge: path['charge'] ?? '' }, ctx.origin, true).charge),
    }),
  ];

  const refundsOfCharge: VirtualExpansion = (charge) => {
    const id = String(charge['id']);
    return paginate(listFor({ charge: id }), {}, `/v1/charges/${id}/refunds`);
  };

  return { collection, require, create: (params, origin) => create(params, origin, false), settle, fail, requireAction, failRecentOnChargeback, routes, expansions: [['charge.refunds', refundsOfCharge]] };
}
