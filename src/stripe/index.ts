// The Stripe adapter's public surface: the client, the two targets, the reads for after a send, the errors it
// raises. The only module of the project that imports `stripe`.
export { createStripeClient, stripeClientOptionsFromEnv, type StripeClient, type StripeClientOptions } from './client.js';
export { LONGEST_RETRY_AFTER_MS, StripeMisconfigured, StripeUnavailable } from './errors.js';
export { createRefundTarget, REFUND_FACTS, type RefundFact, type RefundTargetOptions } from './refund-target.js';
export { createCreditTarget, CREDIT_FACTS, type CreditFact, type CreditTargetOptions } from './credit-target.js';
export { createStripeReads, type ReadOptions, type StripeReads, type StripeReadsOptions } from './reads.js';
export { EFFECT_ID_KEY, INCIDENT_KEY, REQUEST_KEY } from './metadata.js';
export type { BalanceCreditSummary, DisputeSummary, RefundSummary, RefundView } from './summaries.js';
export { DEFAULT_SEND_TIMEOUT_MS } from './calls.js';
export { createFactsReader } from './facts-reader.js';
export { probeStripe } from './reachability.js';
export { createWebhookVerifier, isLocalApiBase, registerLocalWebhook, removeLeftWebhooks, signWebhookBody, type LeftWebhooks, type LocalWebhook, type WebhookVerifierOptions } from './webhooks.js';
