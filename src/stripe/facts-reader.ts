// The facts worker's reader (src/core/post-send.ts's port) over the adapter's reads: a refund by id, a payment's
// refunds and disputes, a customer's credits, in the shape the post-send facts are built from. A refund Stripe does not know is null,
// not an error; anything Stripe cannot answer now throws (the facts job is retried).
import type Stripe from 'stripe';
import type { CreditFact, DisputeFact, RefundFact, StripeReader } from '../core/post-send.js';
import { Rejected } from '../core/target.js';
import type { StripeClient } from './client.js';
import { EFFECT_ID_KEY, INCIDENT_KEY } from './metadata.js';
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

const incidentOf = (metadata: Stripe.Metadata | null | undefined): string | null => metadata?.[INCIDENT_KEY] ?? metadata?.['incident'] ?? null;
const customerOf = (customer: string | { id: string } | null): string => (typeof customer === 'string' ? customer : (customer?.id ?? ''));

function balanceCredit(transaction: Stripe.CustomerBalanceTransaction): CreditFact {
  return { id: transaction.id, objectType: 'customer_balance_transaction', status: 'credited', amount: transaction.amount, customer: customerOf(transaction.customer), effectId: transaction.metadata?.[EFFECT_ID_KEY] ?? null, incident: incidentOf(transaction.metadata), created: transaction.created };
}

function creditNote(note: Stripe.CreditNote): CreditFact {
  return { id: note.id, objectType: 'credit_note', status: note.status, amount: note.amount, customer: customerOf(note.customer), effectId: note.metadata?.[EFFECT_ID_KEY] ?? null, incident: incidentOf(note.metadata), created: note.created };
}

const missing = (error: unknown) => error instanceof Rejected && error.details.status === 404;

export function createFactsReader(client: StripeClient, options: StripeReadsOptions = {}): StripeReader {
  const reads = createStripeReads(client, options);
  return {
    async refund(id) {
      try {
        return refundFact(await reads.readRefund(id));
      } catch (error) {
        if (missing(error)) return null;
        throw error;
      }
    },
    refundsOf: async (paymentIntent) => (await reads.listRefunds(paymentIntent)).map(refundFact),
    disputesOf: async (paymentIntent) => (await reads.readDisputesOfPaymentIntent(paymentIntent)).map(disputeFact),
    async creditsOf(customer) {
      try {
        const [transactions, notes] = await Promise.all([reads.listBalanceTransactions(customer), reads.listCreditNotes(customer)]);
        // The credit notes' own balance transactions (type credit_note) are the notes again: counted once, as notes.
        return [...transactions.filter((transaction) => transaction.type !== 'credit_note').map(balanceCredit), ...notes.map(creditNote)];
      } catch (error) {
        if (missing(error)) return [];
        throw error;
      }
    },
  };
}
