// Every asynchronous delay the sandbox knows, in milliseconds, per profile. `stripe` follows what test mode was
// seen to do (scenarios.md §2.7, §3.7, stripe-facts §4.7, §5.4, §6.4); `fast` keeps each one at or under 200 ms so
// tests finish quickly while preserving the order of things.
export const delayModes = ['stripe', 'fast'] as const;
export type DelaysMode = (typeof delayModes)[number];

export interface DelayProfile {
  // The test cards' disputes exist when the confirming (or capturing) request returns, as Stripe's own CLI
  // fixtures and the recorded event order need; these four are how long their webhooks then take to arrive.
  /** Test card `pm_card_createDisputeInquiry`: the inquiry's webhooks about 0.4 s after confirm. */
  readonly inquiryOpens: number;
  /** Chargeback test cards: the dispute's webhooks about 0.6 s after confirm. */
  readonly chargebackOpens: number;
  /** With manual capture the chargeback's webhooks about 0.45 s after capture. */
  readonly chargebackOpensAfterCapture: number;
  /** `pm_card_createMultipleDisputes`: the second dispute's webhooks within about a second. */
  readonly secondDisputeOpens: number;
  /** `escalate_inquiry_evidence`: `needs_response` arrived 4.4–10.3 s after submission. */
  readonly inquiryEscalates: number;
  /** `winning_evidence` / `losing_evidence`: `under_review` first, decision about 5 s later. */
  readonly evidenceDecides: number;
  /** `pm_card_pendingRefund`: refund leaves `pending`. */
  readonly pendingRefundSettles: number;
  /** `pm_card_refundFail`: refund turns from `succeeded` to `failed`. */
  readonly refundFailureArrives: number;
  /** First webhook retry; retry n waits this times 2^(n-1). Test mode retries 3 times over a few hours. */
  readonly webhookRetryBase: number;
  /** A test clock stays `advancing` this long before its renewals run and it reads `ready` (13–28 s observed). */
  readonly testClockAdvances: number;
  /**
   * How long an API write (every POST) takes to answer: its Idempotency-Key is in flight all that time, so an
   * overlapping request under the same key gets Stripe's 409 `idempotency_key_in_use` (stripe-facts §3). The write
   * runs, and its events are emitted, at the end of it, just before its answer is stored under the key. No measured
   * figure in the references: 250 ms is an assumed typical test-mode write.
   */
  readonly writeLatency: number;
}

export const delayProfiles: Readonly<Record<DelaysMode, DelayProfile>> = {
  stripe: {
    inquiryOpens: 400,
    chargebackOpens: 600,
    chargebackOpensAfterCapture: 450,
    secondDisputeOpens: 900,
    inquiryEscalates: 6_000,
    evidenceDecides: 5_000,
    pendingRefundSettles: 10_000,
    refundFailureArrives: 10_000,
    webhookRetryBase: 30 * 60_000,
    testClockAdvances: 10_000,
    writeLatency: 250,
  },
  fast: {
    inquiryOpens: 20,
    chargebackOpens: 30,
    chargebackOpensAfterCapture: 25,
    secondDisputeOpens: 50,
    inquiryEscalates: 150,
    evidenceDecides: 100,
    pendingRefundSettles: 100,
    refundFailureArrives: 100,
    webhookRetryBase: 50,
    testClockAdvances: 100,
    // The test suite makes thousands of sandbox calls under `fast`.
    writeLatency: 0,
  },
};

export type DelayName = keyof DelayProfile;

export function isDelaysMode(value: string): value is DelaysMode {
  return (delayModes as readonly string[]).includes(value);
}
