// What the post-send facts are made of (DESIGN §8): a refund or a dispute as the facts worker reads it from Stripe,
// the reader port src/stripe implements, and the event types the webhook route passes on. Types and names only.

/**
 * A refund as the facts need it (what src/stripe's readers return). `currency`: Stripe's (lowercase), the unit of
 * `amount`; absent from a reader that does not say it.
 */
export type RefundFact = { id: string; status: string; amount: number; charge: string | null; paymentIntent: string | null; failureReason: string | null; effectId: string | null; created: number | null; currency?: string };
export type DisputeFact = { id: string; status: string; amount: number; charge: string | null; paymentIntent: string | null; reason: string | null; created: number | null };

/**
 * A charge as the facts need it: its payment (null for a charge made without a PaymentIntent), its amount and what is
 * refunded on it (`refunded`: refunds not failed or canceled, and what a partial capture released), in cents.
 */
export type ChargeFact = { id: string; amount: number; refunded: number; paymentIntent: string | null };

/**
 * A customer credit as the facts need it: a balance transaction (a credit the gate or anyone else posted; `status`
 * `credited`) or a credit note (`issued` or `void`), with the effect id and incident its metadata carries, the currency
 * it is in, and the currency the customer is billed in (`customer.currency` as read with it; null while it has none).
 */
export type CreditFact = {
  id: string;
  objectType: 'customer_balance_transaction' | 'credit_note';
  status: string;
  amount: number;
  currency: string | null;
  customer: string;
  customerCurrency: string | null;
  effectId: string | null;
  incident: string | null;
  created: number | null;
};

/** What the facts worker reads from Stripe (src/stripe implements it; tests may use the sandbox through it). */
export type StripeReader = {
  refund(id: string): Promise<RefundFact | null>;
  refundsOf(paymentIntent: string): Promise<RefundFact[]>;
  disputesOf(paymentIntent: string): Promise<DisputeFact[]>;
  /**
   * The charge (null when Stripe does not know it): the payment a dispute that names only its charge is on, and the
   * amounts its chargeback is weighed against. Optional: a reader without it records disputes as before.
   */
  charge?(id: string): Promise<ChargeFact | null>;
  /**
   * The customer's balance transactions and credit notes; a customer Stripe does not know has none. A deleted one has
   * its credit notes only: Stripe 404s the list of a deleted customer's balance transactions, for good, and that drops
   * only those (src/facts/apply.ts records a balance move announced after it as unread).
   */
  creditsOf(customer: string): Promise<CreditFact[]>;
  /**
   * Whether Stripe says the customer is deleted now (its retrieve answers the `deleted: true` stub); false for one it
   * has, and for one it never knew. What a `customer.deleted` event says is checked against it before it is recorded.
   * Optional: without it the signed event is taken as it is.
   */
  customerDeleted?(customer: string): Promise<boolean>;
};

/**
 * A Stripe event, as much of it as the facts need. `previous_attributes`, when the event carried it (an `*.updated`
 * event: the prior values of the fields that changed), says what the change touched: a `customer.updated` without
 * `balance` there moved no balance (src/facts/apply.ts applyCredits).
 */
export type StripeEvent = { id: string; type: string; created?: number; data: { object: Record<string, unknown>; previous_attributes?: Record<string, unknown> } };

export const REFUND_EVENTS = ['refund.created', 'refund.updated', 'refund.failed', 'charge.refund.updated', 'charge.refunded'] as const;
export const DISPUTE_EVENTS = ['charge.dispute.created', 'charge.dispute.updated', 'charge.dispute.closed', 'charge.dispute.funds_withdrawn', 'charge.dispute.funds_reinstated'] as const;
/**
 * Credits: Stripe has no event for a customer balance transaction; a balance move is announced as
 * `customer.updated` (with `previous_attributes.balance`), and credit notes have their own events. `customer.deleted`
 * carries the customer as it was, its `balance` included: the last word on a credit still in that balance, since Stripe
 * never invoices a deleted customer again and keeps no balance for it to read later (src/facts/apply.ts).
 */
export const CREDIT_EVENTS = ['customer.updated', 'customer.deleted', 'credit_note.created', 'credit_note.updated', 'credit_note.voided'] as const;
/** Every event type the facts worker acts on; anything else is acknowledged and ignored. */
export const FACT_EVENTS: readonly string[] = [...REFUND_EVENTS, ...DISPUTE_EVENTS, ...CREDIT_EVENTS];

/** What the webhook route learns from a signed body: the event, or why it is not one (a 400 with this reason). */
export type WebhookVerdict =
  | { ok: true; event: StripeEvent }
  | { ok: false; reason: 'missing_signature' | 'bad_signature' | 'stale_timestamp' | 'not_an_event'; message: string };
