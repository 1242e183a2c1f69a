// What a decider is asked (a case: the story, the approval, the facts the caller read from Stripe) and what it
// answers (a Decision). A case is refused here, before any model is asked, when it could not lead to a valid
// proposal: an approval whose scope names the wrong kind of subject, facts that are not canonical JSON.
import { z } from 'zod';
import { SUBJECT } from '../core/approval.js';
import type { EffectKind } from '../core/effects.js';
import { InterlockError, zodFieldProblems } from '../core/errors.js';
import { CASE_ID, STORY_MAX_CHARS } from '../core/cases.js';
import { assertJson, canonicalJson, nestsDeeperThan, type JsonObject } from '../core/json.js';
import { currencyCode } from '../core/money-text.js';
import { APPROVAL_ID } from '../core/proposal.js';
import { freeText } from '../core/text.js';

/** The tools whose results the caller reads from Stripe and hands in as `facts`, keyed by tool name. */
export const LOOKUP_TOOLS = ['get_payment', 'get_account'] as const;
export type LookupTool = (typeof LOOKUP_TOOLS)[number];

/** A case's id and story follow the case record's rules (src/core/cases.ts). */
export { CASE_ID, STORY_MAX_CHARS };

/** Facts are premises-sized: a model reads them, and a proposal's premises are bounded the same way. */
export const FACTS_LIMITS = { depth: 8, chars: 16_000 } as const;

export type CaseApproval = {
  id: string;
  capCents: number;
  /** `payment:pi_…` for a refund, `customer:cus_…` for a credit, spelled as the gate's approvals are. */
  scope: string;
  approver?: string | undefined;
  /**
   * What this case may still ask for, in the same minor units, as the gate counts it at dispatch: the cap less what
   * effects under the approval hold or sent already (its running `reservedCents`), at most what the cap set on its
   * scope leaves (a subject cap, shared by every approval on it), and 0 once every use of the approval is spent.
   * Absent: the whole cap. The decider tells the model this, the rules decider asks at most this, and an ask over it is
   * MODEL_DEVIATED (check.ts): the gate would refuse it (OVER_CAP, LEASE).
   */
  centsLeft?: number | undefined;
  /** What holds centsLeft below the cap, so the texts can say why (absent: the approval's own cap). */
  leftBy?: LeftBy | undefined;
};

/** What holds a case's room below its approval's cap: effects under the approval, the subject's cap, or its uses. */
export const LEFT_BY = ['approval', 'subject_cap', 'uses'] as const;
export type LeftBy = (typeof LEFT_BY)[number];

export type DecisionCase = {
  caseId: string;
  kind: EffectKind;
  story: string;
  approval: CaseApproval;
  facts: Partial<Record<LookupTool, JsonObject>>;
  /** The incident a credit compensates (the credit effect's `incident`); required for a credit. */
  incident?: string | undefined;
};

/** The lookup whose facts describe a case's subject: the payment a refund returns, the customer a credit is given to. */
const LOOKUP_OF: Record<EffectKind, LookupTool> = { refund: 'get_payment', credit: 'get_account' };

/**
 * The currency of a case's money (lowercase ISO code) as the facts the caller read say it (the `currency` premise:
 * the payment's for a refund, the one credits are given in for a credit), or null when they name none. Amounts,
 * the approval's cap included, are in its smallest unit (moneyText): 2000 is $20.00 in usd and ¥2,000 in jpy.
 */
export function caseCurrency(input: Pick<DecisionCase, 'kind' | 'facts'>): string | null {
  return currencyCode(input.facts[LOOKUP_OF[input.kind]]?.['currency']);
}

/**
 * What the facts say a refund case's payment may still return (`refundable`, in the currency's smallest unit: the
 * captured amount less what other refunds returned, 0 for a charge failed, not captured or missing), or null when they
 * do not say (a credit case, a payment Stripe does not know, facts read before the premise existed). The target refuses
 * a refund over it before the send, so no decider asks for more (rules.ts) and an ask over it is MODEL_DEVIATED.
 */
export function refundableOf(input: Pick<DecisionCase, 'kind' | 'facts'>): number | null {
  if (input.kind !== 'refund') return null;
  const value = input.facts.get_payment?.['refundable'];
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

/**
 * `deviations`: how the model's answer went outside the approval in ways its action and amount do not show (a call
 * naming another payment or customer, a second decision beside it), set by a decider that read an ask for more out
 * of an answer that was no well-formed decision, or a well-formed money call whose own words name its amount in whole
 * units (anthropic.ts, amountOfCall). checkDecision counts each as a problem, so such a decision is never
 * accepted. `amountCents` is NaN when that answer named no amount.
 */
export type RefundDecision = { action: 'refund'; amountCents: number; reason: string; model: string; text: string; deviations?: string[] };
export type CreditDecision = { action: 'credit'; amountCents: number; description: string; model: string; text: string; deviations?: string[] };
export type DeclineDecision = { action: 'decline'; reason: string; model: string; text: string };
export type MoneyDecision = RefundDecision | CreditDecision;
export type Decision = MoneyDecision | DeclineDecision;

export type Decider = {
  /** `rules` or `anthropic`; the model id of a decision is in the decision itself. */
  readonly name: 'rules' | 'anthropic';
  decide(input: DecisionCase, options?: { signal?: AbortSignal }): Promise<Decision>;
};

const INCIDENT = /^[A-Za-z0-9_.:#-]{1,200}$/;

const caseSchema = z.strictObject({
  caseId: z.string({ error: 'must be a string' }).regex(CASE_ID, 'must be 1-200 letters, digits or _ . : # -'),
  kind: z.enum(['refund', 'credit'], { error: 'must be refund or credit' }),
  story: freeText(STORY_MAX_CHARS).refine((value) => value.trim() !== '', 'must tell what happened'),
  approval: z.object({
    id: z.string({ error: 'must be a string' }).regex(APPROVAL_ID, 'must be 1-200 letters, digits or _ . : -'),
    // The cap covers every effect under the approval together, so it may be more than one effect moves
    // (MAX_AMOUNT_CENTS): the decision's amount is bounded by both (the tool's schema, checkDecision).
    capCents: z.number({ error: 'must be a number of cents' }).int('must be a whole number of cents').positive('must be more than zero cents'),
    scope: z.string({ error: 'must be a string' }).regex(SUBJECT, 'must name one payment or customer, e.g. payment:pi_123 or customer:cus_123'),
    approver: freeText(200).optional(),
    centsLeft: z.number({ error: 'must be a number of cents' }).int('must be a whole number of cents').nonnegative('must be zero cents or more').optional(),
    leftBy: z.enum(LEFT_BY, { error: `must be one of ${LEFT_BY.join(', ')}` }).optional(),
  }),
  facts: z.partialRecord(z.enum(LOOKUP_TOOLS, { error: `must be one of ${LOOKUP_TOOLS.join(', ')}` }), z.record(z.string(), z.unknown(), { error: 'must be a JSON object' })),
  incident: z.string({ error: 'must be a string' }).regex(INCIDENT, 'must be 1-200 letters, digits or _ . : # -').optional(),
});

function refuse(fields: { path: string; message: string }[]): never {
  throw new InterlockError('invalid_request', `The case cannot be decided (${fields.map((field) => `${field.path}: ${field.message}`).join('; ')}). Nothing was asked or proposed.`, { fields });
}

/** Checks a case before any model is asked; throws invalid_request naming every bad field. */
export function parseCase(input: unknown): DecisionCase {
  const parsed = caseSchema.safeParse(input);
  if (!parsed.success) refuse(zodFieldProblems(parsed.error.issues, [], 'case'));
  const value = parsed.data;
  const problems: { path: string; message: string }[] = [];
  const subjectKind = value.approval.scope.startsWith('payment:') ? 'refund' : 'credit';
  if (subjectKind !== value.kind) problems.push({ path: 'approval.scope', message: `names a ${value.approval.scope.split(':')[0]}, so it cannot approve a ${value.kind}` });
  if (value.approval.centsLeft !== undefined && value.approval.centsLeft > value.approval.capCents) problems.push({ path: 'approval.centsLeft', message: `is more than the cap of ${value.approval.capCents}` });
  if (value.kind === 'credit' && value.incident === undefined) problems.push({ path: 'incident', message: 'a credit names the incident it compensates' });
  const facts: Partial<Record<LookupTool, JsonObject>> = {};
  // Read from the input itself: the schema's copy would drop a "__proto__" key instead of refusing it.
  const rawFacts = (input as { facts: Record<string, unknown> }).facts;
  for (const tool of LOOKUP_TOOLS) {
    if (!(tool in value.facts)) continue;
    try {
      const json = assertJson(rawFacts[tool], `facts.${tool}`) as JsonObject;
      if (nestsDeeperThan(json, FACTS_LIMITS.depth)) problems.push({ path: `facts.${tool}`, message: `nests deeper than ${FACTS_LIMITS.depth} levels` });
      else if (canonicalJson(json).length > FACTS_LIMITS.chars) problems.push({ path: `facts.${tool}`, message: `is larger than ${FACTS_LIMITS.chars} characters of JSON` });
      else facts[tool] = json;
    } catch (error) {
      problems.push({ path: `facts.${tool}`, message: error instanceof Error ? error.message : String(error) });
    }
  }
  if (problems.length > 0) refuse(problems);
  const approval: CaseApproval = { id: value.approval.id, capCents: value.approval.capCents, scope: value.approval.scope };
  if (value.approval.approver !== undefined) approval.approver = value.approval.approver;
  if (value.approval.centsLeft !== undefined) approval.centsLeft = value.approval.centsLeft;
  if (value.approval.leftBy !== undefined) approval.leftBy = value.approval.leftBy;
  const decisionCase: DecisionCase = { caseId: value.caseId, kind: value.kind, story: value.story, approval, facts };
  if (value.incident !== undefined) decisionCase.incident = value.incident;
  return decisionCase;
}

/** What a case may still ask for under its approval: what is left (centsLeft), or the whole cap when not given. */
export function centsLeftOf(approval: CaseApproval): number {
  return approval.centsLeft === undefined ? approval.capCents : Math.max(0, Math.min(approval.capCents, approval.centsLeft));
}

/** The Stripe id the approval's scope names (`pi_…` or `cus_…`). */
export function subjectId(approval: CaseApproval): string {
  return approval.scope.slice(approval.scope.indexOf(':') + 1);
}
