// The facts worker's reader (src/core/post-send.ts's port) over the adapter's reads: a refund by id, a payment's
// refunds and disputes, a customer's credits (with the currency the customer is billed in), in the shape the post-send
// facts are built from. A refund Stripe does not know is null, not an error; anything Stripe cannot answer now throws
// (the facts job is retried).
import type Stripe from 'stripe';
import type { ChargeFact, CreditFact, DisputeFact, RefundFact, StripeReader } from '../core/post-send.js';
import { Rejected } from '../core/target.js';
import type { StripeClient } from './client.js';
import { EFFECT_ID_KEY, INCIDENT_KEY } from './metadata.js';
import { createStripeReads, type StripeReadsOptions } from './reads.js';
import type { ChargeSummary, DisputeSummary, RefundView } from './summaries.js';

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
    currency: refund.currency.toLowerCase(),
  };
}

function disputeFact(dispute: DisputeSummary): DisputeFact {
  return { id: dispute.id, status: dispute.status, amount: dispute.amount, charge: dispute.charge, paymentIntent: dispute.payment_intent, reason: dispute.reason, created: dispute.created };
}

function chargeFact(charge: ChargeSummary): ChargeFact {
  return { id: charge.id, amount: charge.amount, refunded: charge.amount_refunded, paymentIntent: charge.payment_intent };
}

const incidentOf = (metadata: Stripe.Metadata | null | undefined): string | null => metadata?.[INCIDENT_KEY] ?? metadata?.['incident'] ?? null;
const customerOf = (customer: string | { id: string } | null): string => (typeof customer === 'string' ? customer : (customer?.id ?? ''));

function balanceCredit(transaction: Stripe.CustomerBalanceTransaction, billed: string | null): CreditFact {
  return {
    id: transaction.id,
    objectType: 'customer_balance_transaction',
    status: 'credited',
    amount: transaction.amount,
    currency: transaction.currency.toLowerCase(),
    customer: customerOf(transaction.customer),
    customerCurrency: billed,
    effectId: transaction.metadata?.[EFFECT_ID_KEY] ?? null,
    incident: incidentOf(transaction.metadata),
    created: transaction.created,
  };
}

function creditNote(note: Stripe.CreditNote, billed: string | null): CreditFact {
  return {
    id: note.id,
    objectType: 'credit_note',
    status: note.status,
    amount: note.amount,
    currency: note.currency.toLowerCase(),
    customer: customerOf(note.customer),
    customerCurrency: billed,
    effectId: note.metadata?.[EFFECT_ID_KEY] ?? null,
    incident: incidentOf(note.metadata),
    created: note.created,
  };
}

/** The currency the customer is billed in (`customer.currency`); null while it has none, or once it was deleted. */
function billedIn(customer: Stripe.Customer | Stripe.DeletedCustomer): string | null {
  return 'deleted' in customer && customer.deleted === true ? null : ((customer as Stripe.Customer).currency?.toLowerCase() ?? null);
}

const missing = (error: unknown) => error instanceof Rejected && error.details.status === 404;

/** What `read` resolves to, or `none` when Stripe answers 404; any other failure throws (the job is retried). */
async function orNone<T>(read: Promise<T>, none: T): Promise<T> {
  try {
    return await read;
  } catch (error) {
    if (missing(error)) return none;
    throw error;
  }
}

export function createFactsReader(client: StripeClient, options: StripeReadsOptions = {}): StripeReader {
  const reads = createStripeReads(client, options);
  return {
    async customerDeleted(customer) {
      try {
        const found = await reads.readCustomer(customer);
        return 'deleted' in found && found.deleted === true;
      } catch (error) {
        if (missing(error)) return false;
        throw error;
      }
    },
    async refund(id) {
      try {
        return refundFact(await reads.readRefund(id));
      } catch (error) {
        if (missing(error)) return null;
        throw error;
      }
    },
    // A payment Stripe does not know (404 on the list's filter: test data deleted, a key of another account) has no
    // refund or dispute to record: read as none, as a refund or charge it does not know reads as null, rather than a
    // facts job and every reconcile pass failing on it for good.
    refundsOf: async (paymentIntent) => (await orNone(reads.listRefunds(paymentIntent), [])).map(refundFact),
    disputesOf: async (paymentIntent) => (await orNone(reads.readDisputesOfPaymentIntent(paymentIntent), [])).map(disputeFact),
    async charge(id) {
      try {
        return chargeFact(await reads.readCharge(id));
      } catch (error) {
        if (missing(error)) return null;
        throw error;
      }
    },
    async creditsOf(customer) {
      // Three reads, each on its own: Stripe 404s a deleted customer's balance transactions, for good, while its credit
      // notes stay listable, so a note billing voids before or after the deletion is still read (and the receipt sees it
      // void). A 404 drops only the list it answers; any other failure throws (the job is retried).
      // The customer too, for the currency it is billed in: a credit in another one never reaches its invoices.
      const [found, transactions, notes] = await Promise.all([orNone(reads.readCustomer(customer), null), orNone(reads.listBalanceTransactions(customer), []), orNone(reads.listCreditNotes(customer), [])]);
      const billed = found === null ? null : billedIn(found);
      // The credit notes' own balance transactions (type credit_note) are the notes again: counted once, as notes.
      return [...transactions.filter((transaction) => transaction.type !== 'credit_note').map((transaction) => balanceCredit(transaction, billed)), ...notes.map((note) => creditNote(note, billed))];
    },
  };
}
