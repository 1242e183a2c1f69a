// A support case on its way to a decision: what was submitted (the case id, the payment or customer, the story,
// the approval) and where it stands (queued, deciding, declined, deviated, proposed, failed). Pure: the decisions
// worker (queues/decisions.ts) moves a case along, the Redis store (src/redis/cases.ts) keeps it.
//
// A case id names one decision. It becomes the request id of the effect it may lead to (`case:<id>`), so the
// first recorded proposal binds the payload (I5) however often the case is decided again after a crash.
import { z } from 'zod';
import { creditEffectSchema, refundEffectSchema, type EffectKind } from './effects.js';
import { ERROR_REGISTRY, zodFieldProblems, InterlockError, type ErrorCode } from './errors.js';
import { canonicalJson } from './json.js';
import { APPROVAL_ID, RESERVED_REQUEST_PREFIXES } from './proposal.js';
import { freeText, isVisibleText, personName } from './text.js';

export const CASE_ID = /^[A-Za-z0-9_.:#-]{1,200}$/;
export const STORY_MAX_CHARS = 8_000;

export const CASE_STATES = ['queued', 'deciding', 'declined', 'deviated', 'proposed', 'failed'] as const;
export type CaseState = (typeof CASE_STATES)[number];

/**
 * States where a case's decision is made (or cannot be), and the effect, if any, has its own journal. No run of the
 * case decides it again; only the journal's first proposal moves a case that names no effect (mayReplaceCaseStatus).
 */
export const FINAL_CASE_STATES: ReadonlySet<CaseState> = new Set(['declined', 'deviated', 'proposed', 'failed']);

export type CaseSubmission = {
  caseId: string;
  kind: EffectKind;
  /** `pi_…` for a refund, `cus_…` for a credit. */
  subject: string;
  /** The incident a credit compensates; null for a refund. */
  incident: string | null;
  story: string;
  approval: string;
  /** Who proposes the decided effect (the PROPOSED entry's agent). */
  agent: string;
};

export type CaseDecision = {
  model: string;
  text: string;
  action: 'refund' | 'credit' | 'decline';
  /** null for a decline. */
  amountCents: number | null;
};

export type CaseError = { code: ErrorCode; message: string };

export type CaseStatus = {
  state: CaseState;
  decision: CaseDecision | null;
  /** The effect the case proposed (its request id is `case:<case id>`); null until proposed. */
  effectId: string | null;
  /** Why a decision was refused (MODEL_DEVIATED's problems), empty otherwise. */
  problems: string[];
  /** The last error: the one that failed the case, or the last retried one while it is still being decided. */
  error: CaseError | null;
  /** Decisions attempted (a retried model call counts once per job attempt). */
  attempts: number;
  updatedAt: number;
};

export type CaseRecord = {
  submission: CaseSubmission;
  /** Which token filed it (kept beside the submission; a re-submission by another token is still the same case). */
  submittedBy: string;
  createdAt: number;
  status: CaseStatus;
};

/**
 * Why a story was refused: it is the account the decider reads and the case record keeps, so it must hold a character
 * a reader can see (isVisibleText). One of only spaces or characters that read as nothing (U+200B, U+2800, U+3164 ...)
 * is refused, as a note is.
 */
export const BLANK_STORY = 'must tell what happened in characters a reader can see (spaces and invisible characters alone read as nothing)';

/** A case's effect is requested as `case:<case id>` (decider/check.ts), which must fit a request id's 200 characters. */
const CASE_ID_MAX = 200 - RESERVED_REQUEST_PREFIXES.case.length;
const caseId = z
  .string({ error: 'must be a string' })
  .regex(CASE_ID, 'must be 1-200 letters, digits or _ . : # -')
  .max(CASE_ID_MAX, `must be at most ${CASE_ID_MAX} characters: its effect is requested as case:<case id>, and a request id has at most 200`)
  .refine((value) => value !== '.' && value !== '..', 'may not be . or ..: a URL reads them as steps of its path, so the case\'s own link (/v1/cases/<id>) could never reach it');

export const caseSubmissionSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    caseId,
    kind: z.literal('refund'),
    subject: refundEffectSchema.shape.paymentIntent,
    incident: z.null(),
    story: freeText(STORY_MAX_CHARS).refine(isVisibleText, BLANK_STORY),
    approval: z.string({ error: 'must be a string' }).regex(APPROVAL_ID, 'must be 1-200 letters, digits or _ . : -'),
    agent: personName(100),
  }),
  z.strictObject({
    caseId,
    kind: z.literal('credit'),
    subject: creditEffectSchema.shape.customer,
    incident: creditEffectSchema.shape.incident,
    story: freeText(STORY_MAX_CHARS).refine(isVisibleText, BLANK_STORY),
    approval: z.string({ error: 'must be a string' }).regex(APPROVAL_ID, 'must be 1-200 letters, digits or _ . : -'),
    agent: personName(100),
  }),
]);

/** Checks a submission; throws invalid_request naming every bad field (nothing is stored or queued). */
export function parseCaseSubmission(input: unknown): CaseSubmission {
  const parsed = caseSubmissionSchema.safeParse(input);
  if (!parsed.success) {
    const fields = zodFieldProblems(parsed.error.issues, [], 'case');
    throw new InterlockError('invalid_request', `The case is invalid (${fields.map((field) => `${field.path}: ${field.message}`).join('; ')}). Nothing was queued.`, { fields });
  }
  return parsed.data;
}

/** A case as callers give it: a payment for a refund, or a customer and an incident for a credit. */
export type CaseInput = { caseId: unknown; paymentIntent?: unknown; customer?: unknown; incident?: unknown; story: unknown; approval: unknown; agent: unknown };

/**
 * The submission of a case as callers give it, checked whole: exactly one of a payment intent or a customer, an
 * incident with a customer and only then, and every field by parseCaseSubmission. Throws invalid_request naming
 * each problem by the API's field names (nothing is stored or queued).
 */
export function caseSubmissionOf(input: CaseInput): CaseSubmission {
  const fields: { path: string; message: string }[] = [];
  if ((input.paymentIntent === undefined) === (input.customer === undefined)) fields.push({ path: 'payment_intent', message: 'give exactly one of payment_intent (a refund) or customer (a credit)' });
  if (input.customer !== undefined && input.incident === undefined) fields.push({ path: 'incident', message: 'is required with customer: a credit names the incident it compensates' });
  if (input.paymentIntent !== undefined && input.incident !== undefined) fields.push({ path: 'incident', message: 'is only for a credit (with customer)' });
  if (fields.length > 0) throw new InterlockError('invalid_request', `The case is invalid (${fields.map((field) => `${field.path}: ${field.message}`).join('; ')}). Nothing was queued.`, { fields });
  const refund = input.paymentIntent !== undefined;
  try {
    return parseCaseSubmission({ caseId: input.caseId, kind: refund ? 'refund' : 'credit', subject: refund ? input.paymentIntent : input.customer, incident: input.incident ?? null, story: input.story, approval: input.approval, agent: input.agent });
  } catch (error) {
    if (!(error instanceof InterlockError)) throw error;
    const named = error.fields.map((field) => ({ path: field.path === 'caseId' ? 'case_id' : field.path === 'subject' ? (refund ? 'payment_intent' : 'customer') : field.path, message: field.message }));
    throw new InterlockError('invalid_request', `The case is invalid (${named.map((field) => `${field.path}: ${field.message}`).join('; ')}). Nothing was queued.`, { fields: named });
  }
}

/** The approval scope a case's approval must have: the one payment or customer the case is about. */
export function caseScope(submission: Pick<CaseSubmission, 'kind' | 'subject'>): string {
  return `${submission.kind === 'refund' ? 'payment' : 'customer'}:${submission.subject}`;
}

/** Whether two submissions are the same case, asked the same way (a duplicate, answered with the case as it stands). */
export function sameSubmission(a: CaseSubmission, b: CaseSubmission): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

export function queuedStatus(at: number): CaseStatus {
  return { state: 'queued', decision: null, effectId: null, problems: [], error: null, attempts: 0, updatedAt: at };
}

export function isFinalCase(status: CaseStatus): boolean {
  return FINAL_CASE_STATES.has(status.state);
}

/**
 * Whether a failed case may be decided again when it is submitted again: it failed for a reason the registry calls
 * retryable (the Messages API was unavailable, rate-limited or overloaded; its error said "decide it again later")
 * and names no effect, so nothing was proposed. A case that failed for good (a refused key, a missing approval) or
 * that a proposal binds stays as it is.
 */
export function mayReopenCase(status: Pick<CaseStatus, 'state' | 'effectId' | 'error'>): boolean {
  if (status.state !== 'failed' || status.effectId !== null || status.error === null) return false;
  const entry = (ERROR_REGISTRY as Record<string, { retryable: boolean } | undefined>)[status.error.code];
  return entry?.retryable === true;
}

/**
 * Whether a case standing at `stored` may be moved to `next`. Two runs of one case (a job handed to a second worker
 * when the first one's lock lapsed) may both write; the case must end as the journal says. A case not decided yet
 * takes any status. A final case naming an effect (proposed, or deviated with its refused record) is the journal's
 * first proposal under the case's effect id, which never changes: nothing replaces it. A final case naming none
 * (declined, failed, a deviation with no amount to record) is replaced only by one naming the effect the journal
 * holds for it: a proposal recorded by the other run binds, whatever this run concluded.
 */
export function mayReplaceCaseStatus(stored: Pick<CaseStatus, 'state' | 'effectId'>, next: Pick<CaseStatus, 'state' | 'effectId'>): boolean {
  if (!FINAL_CASE_STATES.has(stored.state)) return true;
  if (stored.effectId !== null) return false;
  return FINAL_CASE_STATES.has(next.state) && next.effectId !== null;
}
