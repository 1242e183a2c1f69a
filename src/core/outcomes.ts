// Outcome codes (DESIGN §4), exact strings, each with one plain sentence for people and for models.

export const SUBMIT_OUTCOMES = [
  'COMMITTED',
  'DUPLICATE_IGNORED',
  'IN_FLIGHT',
  'AMBIGUOUS',
  'REFUSED:conflicting_payload',
  'REFUSED:lease',
  'REFUSED:stale_premise',
  'REFUSED:over_cap',
  'REFUSED:target_error',
  'COMMITTED_ON_QUERY',
] as const;

export const RECOVERY_OUTCOMES = [
  'COMMITTED_BY_RETRY',
  'COMMITTED_ON_QUERY',
  'REAPPLIED_AFTER_QUERY',
  'REFUSED:lease_at_recovery',
  'REFUSED:stale_premise_at_recovery',
  'AMBIGUOUS',
] as const;

export type SubmitOutcome = (typeof SUBMIT_OUTCOMES)[number];
export type RecoveryOutcome = (typeof RECOVERY_OUTCOMES)[number] | `UNRESOLVED:${string}`;
export type Outcome = SubmitOutcome | RecoveryOutcome;

export type RefusalCode = Extract<Outcome, `REFUSED:${string}`>;

const SENTENCES: Record<SubmitOutcome | (typeof RECOVERY_OUTCOMES)[number], string> = {
  COMMITTED: 'The effect was sent once and Stripe accepted it.',
  DUPLICATE_IGNORED: 'This request was already carried out; nothing was sent again.',
  IN_FLIGHT: 'Not settled yet: a send of this effect is under way or its outcome is not known yet, another refund of its payment holds it back, Stripe asked to slow down, or Redis replicas are behind, as holder and reason say; nothing is sent twice. Ask again after the retry-after time.',
  AMBIGUOUS: 'Nobody can tell whether the effect landed, so nothing was resent; a person must check Stripe.',
  'REFUSED:conflicting_payload': 'This request was already decided with a different payload; the recorded payload stands and the new one was not sent.',
  'REFUSED:lease': 'The approval is missing, expired, revoked, used up or does not cover this amount, so nothing was sent.',
  'REFUSED:stale_premise': 'A fact this decision depends on is no longer true, so nothing was sent.',
  'REFUSED:over_cap': 'Sending this would go past a shared spending cap, so nothing was sent.',
  'REFUSED:target_error': 'Stripe refused the request outright; it was not sent again.',
  COMMITTED_ON_QUERY: 'The send looked unfinished, but Stripe shows it landed; that result is recorded.',
  COMMITTED_BY_RETRY: 'The first send\'s answer was lost (a crash, a timeout, a dropped connection) and the facts still held, so the effect was resent under the same idempotency key and Stripe confirmed it once.',
  REAPPLIED_AFTER_QUERY: 'The first send\'s answer was lost (a crash, a timeout, a dropped connection), the facts still held and Stripe had no trace of the effect, so it was sent again.',
  'REFUSED:lease_at_recovery': 'The approval lapsed or was revoked while the worker was down, and nothing had landed, so nothing was sent.',
  'REFUSED:stale_premise_at_recovery': 'A fact this effect depends on changed while the worker was down, and nothing had landed, so nothing was sent.',
};

export function explainOutcome(outcome: Outcome): string {
  if (outcome.startsWith('UNRESOLVED:')) {
    return `Recovery could not settle this effect yet (${outcome.slice('UNRESOLVED:'.length)}); it keeps its claim and will be retried.`;
  }
  return SENTENCES[outcome as keyof typeof SENTENCES];
}

/**
 * REFUSED:target_error said two different things under one code: Stripe's definite no to a request that was sent (a
 * 400, 402 or 404), or the target's own check refusing before anything was sent (a credit for an incident already
 * compensated or in another currency, a refund over what is left refundable). A target's own refusal carries no HTTP
 * status, and the gate records its reason under REFUSED_BEFORE_SENDING_PREFIX (gate/settle.ts). Effects settled before
 * that prefix existed are known by the targets' own wording of such a refusal ("…; it was not sent"), which Stripe's
 * answers never end with (src/stripe/errors.ts words them "Stripe refused POST … (400 …)").
 */
export const REFUSED_BEFORE_SENDING_PREFIX = 'the target refused before sending: ';
const REFUSED_BEFORE_SENDING = 'The target\'s own check refused it before sending, so the request never reached Stripe; the reason says why.';

function refusedBeforeSending(reason: string): boolean {
  return reason.startsWith(REFUSED_BEFORE_SENDING_PREFIX) || /\bwas not sent$/.test(reason);
}

/** The reason of a REFUSED:target_error for a definite no from the target to a request that was sent (gate/settle.ts). */
export const REFUSED_BY_TARGET_PREFIX = 'the target refused: ';

/**
 * Ends the reason of a REFUSED:target_error that proves nothing of the effect can be at the target: the refused send was
 * the effect's first (no earlier request of it can land) and the target's refusal proves none of its own requests
 * landed (Target.refusalProvesNothingLanded: the pre-send check refused before anything left, or the target answered a
 * definite no that its retries, riding one idempotency key, replay). The gate writes it only then (gate/settle.ts
 * `nothingLeft`), after the target's own words, so the reason still starts as every target_error's does and keeps its
 * sentence. An object labelled with such an effect's id is someone else's, never its late landing (facts/apply.ts).
 * A reason without it, whatever else it says (a refusal before sending of a resend, while an earlier request of the
 * effect may still land; any reason an earlier version recorded), leaves a landing possible.
 */
export const NOTHING_LANDED_SUFFIX = "; it was the effect's only send, so nothing of the effect can be at the target";

/**
 * Whether a REFUSED:target_error's recorded reason proves that nothing of the effect can be at the target (written with
 * NOTHING_LANDED_SUFFIX). The target's words sit between the gate's prefix and the suffix: Stripe's refusals end in
 * their status's parenthesis or a quote's cut, never in the suffix.
 */
export function refusalLeftNothing(reason: string): boolean {
  return (reason.startsWith(REFUSED_BEFORE_SENDING_PREFIX) || reason.startsWith(REFUSED_BY_TARGET_PREFIX)) && reason.endsWith(NOTHING_LANDED_SUFFIX);
}

/**
 * How the reason of a REFUSED:lease_at_recovery starts when the subject's cap, set lower since the dispatch, no longer
 * fits the effect (gate/recover.ts subjectCapProblem), the approval itself still live; and its sentence.
 */
export const CAP_AT_RECOVERY_PREFIX = 'the cap on ';
const CAP_AT_RECOVERY = "The subject's cap was lowered while the worker was down and no longer fits this effect, and nothing had landed, so nothing was sent.";

/**
 * The sentence for an outcome as the gate gave it: `reason` is the reason recorded with it (the settling entry's,
 * outcomeReason; a GateResult's `reason`). The gate's answers and recovery report, `interlock effect show`, the API's
 * effect and its page pick a sentence here, so they agree; an outcome no reason changes may use explainOutcome.
 */
export function explainRecorded(outcome: Outcome, reason: string | null | undefined): string {
  if (outcome === 'REFUSED:target_error' && typeof reason === 'string' && refusedBeforeSending(reason)) return REFUSED_BEFORE_SENDING;
  if (outcome === 'REFUSED:lease_at_recovery' && typeof reason === 'string' && reason.startsWith(CAP_AT_RECOVERY_PREFIX)) return CAP_AT_RECOVERY;
  return explainOutcome(outcome);
}

export function isRefusal(outcome: Outcome): outcome is RefusalCode {
  return outcome.startsWith('REFUSED:');
}
