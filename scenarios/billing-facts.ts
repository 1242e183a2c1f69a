// The billing_credit facts as the seed's harness read them (scenarios.md §3.3): the two premises the baselines
// compare (subscription_status, incident_compensation) and the two coarser candidates recorded beside them
// (customer_balance, compensation_by_others). Harness code, read with the scenarios' own Stripe client.
import type { StripeHttp, StripeObject } from './stripe-http.js';

export type BillingCase = { case_id: string; incident: string; customer: string; subscription: string };
export type BillingPremises = { subscription_status: string; incident_compensation: number };
export type BillingObservations = BillingPremises & { customer_balance: number; compensation_by_others: number };

function meta(object: StripeObject): Record<string, unknown> {
  return (object.metadata ?? {}) as Record<string, unknown>;
}

/** Cents credited to the customer by anyone but this case: issued credit notes plus negative adjustments. */
function compensation(notes: StripeObject[], transactions: StripeObject[], caseId: string, incident: string | null): number {
  const fromNotes = notes.filter((n) => n.status === 'issued' && (incident === null || meta(n).incident === incident)).reduce((sum, n) => sum + Number(n.amount), 0);
  const fromAdjustments = transactions
    .filter((t) => t.type === 'adjustment' && Number(t.amount) < 0 && meta(t).case_id !== caseId && meta(t).interlock_request !== `case-${caseId}` && (incident === null || meta(t).incident === incident || meta(t).interlock_incident === incident))
    .reduce((sum, t) => sum - Number(t.amount), 0);
  return fromNotes + fromAdjustments;
}

export async function billingObservations(stripe: StripeHttp, kase: BillingCase): Promise<BillingObservations> {
  const [subscription, customer, notes, transactions] = await Promise.all([
    stripe.get(`/v1/subscriptions/${kase.subscription}`),
    stripe.get(`/v1/customers/${kase.customer}`),
    stripe.list('/v1/credit_notes', { customer: kase.customer }),
    stripe.list(`/v1/customers/${kase.customer}/balance_transactions`),
  ]);
  return {
    subscription_status: String(subscription.status),
    incident_compensation: compensation(notes, transactions, kase.case_id, kase.incident),
    customer_balance: Number(customer.balance),
    compensation_by_others: compensation(notes, transactions, kase.case_id, null),
  };
}

export async function billingPremises(stripe: StripeHttp, kase: BillingCase): Promise<BillingPremises> {
  const all = await billingObservations(stripe, kase);
  return { subscription_status: all.subscription_status, incident_compensation: all.incident_compensation };
}

/** The case's own credits: balance adjustments tagged with its case id (baselines) or its request (the gate). */
export async function caseCredits(stripe: StripeHttp, kase: BillingCase): Promise<StripeObject[]> {
  const transactions = await stripe.list(`/v1/customers/${kase.customer}/balance_transactions`);
  return transactions.filter((t) => t.type === 'adjustment' && (meta(t).case_id === kase.case_id || meta(t).interlock_request === `case-${kase.case_id}`));
}
