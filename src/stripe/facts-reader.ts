// The facts worker's reader (src/core/post-send.ts's port) over the adapter's reads: a refund by id, a payment's
// refunds and disputes, in the shape the post-send facts are built from. A refund Stripe does not know is null,
// not an error; anything Stripe cannot answer now throws (the facts job is retried).
import type { DisputeFact, RefundFact, StripeReader } from '../core/post-send.js';
import { Rejected } from '../core/target.js';
import type { StripeClient } from './client.js';
import { createStripeReads, type StripeReadsOptions } from './reads.js';
import type { DisputeSummary, RefundView } from './summaries.js';

function refundFact(refund: RefundView): RefundFact {
  return {
    id: refund.id,
    status: refund.status ?? 'unknown',
    amount: refund.amount,
    charge: refund.charge,
    paymentIntent: refund.payment_intent,
    failureReason: refund.failure_reason,
    effectId: refund.interlock_effect_id,
    created: refund.created,
  };
}

function disputeFact(dispute: DisputeSummary): DisputeFact {
  return { id: dispute.id, status: dispute.status, amount: dispute.amount, charge: dispute.charge, paymentIntent: dispute.payment_intent, reason: dispute.reason, created: dispute.created };
}

export function createFactsReader(client: StripeClient, options: StripeReadsOptions = {}): StripeReader {
  const reads = createStripeReads(client, options);
  return {
    async refund(id) {
      try {
        return refundFact(await reads.readRefund(id));
      } catch (error) {
        if (error instanceof Rejected && error.details.status === 404) return null;
        throw error;
      }
    },
    refundsOf: async (paymentIntent) => (await reads.listRefunds(paymentIntent)).map(refundFact),
    disputesOf: async (paymentIntent) => (await reads.readDisputesOfPaymentIntent(paymentIntent)).map(disputeFact),
  };
}
