// Reads for after a send (the facts worker of issue 10 re-reads objects before it appends post-send facts): a
// refund, a payment's refunds, a charge, a charge's or a payment's disputes, a customer, its balance transactions and credit
// notes. Errors as for every read:
// Rejected for Stripe's definite no (a 404 `resource_missing`), StripeUnavailable (retryable, with
// `retryAfterMs` when Stripe said) when it cannot answer now, StripeMisconfigured for the key.
import type Stripe from 'stripe';
import { MAX_PAGE_SIZE, listAll, readBudget, readCall } from './calls.js';
import type { StripeClient } from './client.js';
import { chargeSummary, disputeSummary, refundView, type ChargeSummary, type DisputeSummary, type RefundView } from './summaries.js';

export type StripeReadsOptions = {
  /** How long one read (every page of a list) may take. Default 10 s. */
  timeoutMs?: number;
  pageSize?: number;
};

export type ReadOptions = { timeoutMs?: number };

export type StripeReads = {
  readRefund(refundId: string, options?: ReadOptions): Promise<RefundView>;
  /** Every refund of the PaymentIntent, every status, newest first. */
  listRefunds(paymentIntent: string, options?: ReadOptions): Promise<RefundView[]>;
  /** The charge: its payment, its amount and what is refunded on it. */
  readCharge(chargeId: string, options?: ReadOptions): Promise<ChargeSummary>;
  /** Every dispute of the charge, inquiries included (see `chargeback`), newest first. */
  readDisputesOfCharge(chargeId: string, options?: ReadOptions): Promise<DisputeSummary[]>;
  readDisputesOfPaymentIntent(paymentIntent: string, options?: ReadOptions): Promise<DisputeSummary[]>;
  /** Every balance transaction of the customer (credits are negative), newest first. */
  listBalanceTransactions(customer: string, options?: ReadOptions): Promise<Stripe.CustomerBalanceTransaction[]>;
  /** Every credit note of the customer, issued and void, newest first. */
  listCreditNotes(customer: string, options?: ReadOptions): Promise<Stripe.CreditNote[]>;
  /** The customer (a deleted one as Stripe answers it). */
  readCustomer(customer: string, options?: ReadOptions): Promise<Stripe.Customer | Stripe.DeletedCustomer>;
};

export const DEFAULT_READ_TIMEOUT_MS = 10_000;

export function createStripeReads(client: StripeClient, options: StripeReadsOptions = {}): StripeReads {
  const pageSize = options.pageSize ?? MAX_PAGE_SIZE;
  const budget = (read?: ReadOptions) => readBudget(read?.timeoutMs ?? options.timeoutMs ?? DEFAULT_READ_TIMEOUT_MS);
  const disputes = async (filter: Stripe.DisputeListParams, what: string, read?: ReadOptions) =>
    (await listAll(client, budget(read), what, (sdk, cursor, o) => sdk.disputes.list({ ...filter, ...cursor }, o), { pageSize })).map(disputeSummary);
  return {
    async readRefund(refundId, read) {
      return refundView(await readCall(client, budget(read), `GET /v1/refunds/${refundId}`, (sdk, o) => sdk.refunds.retrieve(refundId, {}, o)));
    },
    async listRefunds(paymentIntent, read) {
      const refunds = await listAll(client, budget(read), `GET /v1/refunds?payment_intent=${paymentIntent}`, (sdk, cursor, o) => sdk.refunds.list({ payment_intent: paymentIntent, ...cursor }, o), { pageSize });
      return refunds.map(refundView);
    },
    async readCharge(chargeId, read) {
      return chargeSummary(await readCall(client, budget(read), `GET /v1/charges/${chargeId}`, (sdk, o) => sdk.charges.retrieve(chargeId, {}, o)));
    },
    readDisputesOfCharge: (chargeId, read) => disputes({ charge: chargeId }, `GET /v1/disputes?charge=${chargeId}`, read),
    readDisputesOfPaymentIntent: (paymentIntent, read) => disputes({ payment_intent: paymentIntent }, `GET /v1/disputes?payment_intent=${paymentIntent}`, read),
    listBalanceTransactions: (customer, read) =>
      listAll(client, budget(read), `GET /v1/customers/${customer}/balance_transactions`, (sdk, cursor, o) => sdk.customers.listBalanceTransactions(customer, cursor, o), { pageSize }),
    listCreditNotes: (customer, read) => listAll(client, budget(read), `GET /v1/credit_notes?customer=${customer}`, (sdk, cursor, o) => sdk.creditNotes.list({ customer, ...cursor }, o), { pageSize }),
    readCustomer: (customer, read) => readCall(client, budget(read), `GET /v1/customers/${customer}`, (sdk, o) => sdk.customers.retrieve(customer, {}, o)),
  };
}
