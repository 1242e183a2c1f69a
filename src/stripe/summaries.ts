// Compact views of Stripe objects. Receipts keep what a target returns, and Stripe's objects carry dozens of fields
// a receipt has no use for (and some it should not hold, such as payment method details), so the adapter hands
// back only what says what happened to the money.
import type Stripe from 'stripe';
import { EFFECT_ID_KEY } from './metadata.js';
import { mayBeChargeback } from '../core/final-money.js';

export type RefundSummary = {
  id: string;
  object: 'refund';
  status: string | null;
  amount: number;
  currency: string;
  charge: string | null;
  payment_intent: string | null;
  failure_reason: string | null;
  created: number;
};

/** A refund as the facts worker reads it: the summary and the effect that made it, if one did. */
export type RefundView = RefundSummary & { interlock_effect_id: string | null };

export type DisputeSummary = {
  id: string;
  object: 'dispute';
  status: string;
  /** False for an inquiry (`warning_*`, no money moved yet); true once it is, or escalated to, a chargeback. */
  chargeback: boolean;
  amount: number;
  currency: string;
  charge: string;
  payment_intent: string | null;
  reason: string;
  is_charge_refundable: boolean;
  created: number;
};

/**
 * A charge as the facts need it: its payment (null for a charge made without a PaymentIntent), its amount and what is
 * refunded on it (refunds not failed or canceled, plus what a partial capture released), in `currency`'s minor unit.
 */
export type ChargeSummary = {
  id: string;
  object: 'charge';
  amount: number;
  amount_refunded: number;
  currency: string;
  payment_intent: string | null;
};

export type BalanceCreditSummary = {
  id: string;
  object: 'customer_balance_transaction';
  type: string;
  /** Negative: a credit to the customer. */
  amount: number;
  currency: string;
  customer: string;
  created: number;
};

function idOf(value: string | { id: string } | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return typeof value === 'string' ? value : value.id;
}

export function refundSummary(refund: Stripe.Refund): RefundSummary {
  return {
    id: refund.id,
    object: 'refund',
    status: refund.status ?? null,
    amount: refund.amount,
    currency: refund.currency,
    charge: idOf(refund.charge),
    payment_intent: idOf(refund.payment_intent),
    failure_reason: refund.failure_reason ?? null,
    created: refund.created,
  };
}

export function refundView(refund: Stripe.Refund): RefundView {
  return { ...refundSummary(refund), interlock_effect_id: refund.metadata?.[EFFECT_ID_KEY] ?? null };
}

/**
 * A chargeback as a decision's premises count it (core/final-money.ts mayBeChargeback): not an inquiry (a `warning_`
 * status; an inquiry that escalated keeps its id and loses the prefix), nor a dispute prevented (`prevented`, as by
 * a card network's rapid dispute resolution) or closed as refunded, which withdraw nothing.
 */
export function isChargeback(dispute: Pick<Stripe.Dispute, 'status'>): boolean {
  return mayBeChargeback(dispute.status);
}

export function disputeSummary(dispute: Stripe.Dispute): DisputeSummary {
  return {
    id: dispute.id,
    object: 'dispute',
    status: dispute.status,
    chargeback: isChargeback(dispute),
    amount: dispute.amount,
    currency: dispute.currency,
    charge: idOf(dispute.charge) ?? '',
    payment_intent: idOf(dispute.payment_intent),
    reason: dispute.reason,
    is_charge_refundable: dispute.is_charge_refundable,
    created: dispute.created,
  };
}

export function chargeSummary(charge: Stripe.Charge): ChargeSummary {
  return { id: charge.id, object: 'charge', amount: charge.amount, amount_refunded: charge.amount_refunded, currency: charge.currency, payment_intent: idOf(charge.payment_intent) };
}

export function balanceCreditSummary(transaction: Stripe.CustomerBalanceTransaction): BalanceCreditSummary {
  return {
    id: transaction.id,
    object: 'customer_balance_transaction',
    type: transaction.type,
    amount: transaction.amount,
    currency: transaction.currency,
    customer: idOf(transaction.customer) ?? '',
    created: transaction.created,
  };
}

/** Whether Stripe answered a keyed request with the stored answer of an earlier one (`Idempotent-Replayed`). */
export function wasReplayed(object: { lastResponse?: { headers?: Record<string, string> } }): boolean {
  return object.lastResponse?.headers?.['idempotent-replayed'] === 'true';
}
