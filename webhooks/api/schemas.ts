// One zod schema per request body and query, built from the gate's own rules (the effect schemas, identifiers,
// approval ids and scopes exported by src/interlock.ts) so a body the API accepts is a proposal the gate accepts.
// The same schemas validate requests and generate the OpenAPI document (openapi.ts); the response schemas exist
// only for that document.
import { z } from 'zod';
import { ALERT_CURSOR, APPROVAL_ID, APPROVAL_SCOPE, BLANK_STORY, CASE_ID, CASE_STATES, creditEffectSchema, ERROR_REGISTRY, GRANT_LIMITS, freeText, identifier, INBOX_CURSOR, INBOX_KINDS, newApprovalIdProblem, OPERATOR_ACTIONS, personName, PROPOSAL_LIMITS, recordedIdentifier, RECOVERY_OUTCOMES, refundEffectSchema, RESERVED_REQUEST_PREFIXES, requestIdentifier, reservedRequestProblem, STORY_MAX_CHARS, SUBMIT_OUTCOMES, BLANK_NOTE, FACTS_SHOWN, isVisibleNote, type ErrorCode } from '../../src/interlock.js';

/** How long a grant may last (src/core/approval.ts, GRANT_LIMITS: the CLI holds grants to the same bounds). */
export const MAX_EXPIRES_IN_SECONDS = GRANT_LIMITS.maxExpiresInSeconds;
export const MAX_WAIT_SECONDS = 30;
export const MAX_LIST_LIMIT = 100;

export const EFFECT_STATES = ['proposed', 'dispatched', 'committed', 'refused', 'ambiguous'] as const;
export type EffectState = (typeof EFFECT_STATES)[number];
/**
 * The outcomes an effect can settle with (IN_FLIGHT and DUPLICATE_IGNORED answer a submit, they settle nothing), each
 * once: a submit and a recovery both settle COMMITTED_ON_QUERY and AMBIGUOUS.
 */
export const EFFECT_OUTCOMES = [...new Set([...SUBMIT_OUTCOMES, ...RECOVERY_OUTCOMES])].filter((outcome) => outcome !== 'IN_FLIGHT' && outcome !== 'DUPLICATE_IGNORED');

// What the server refuses in a string that JSON Schema cannot say (src/core/text.ts), said in each such field's
// description so a client reads it where it reads the field.
const SEEN_CHARACTERS =
  'No control characters, no space at either end, no lone UTF-16 surrogate, and no character a reader cannot see (a direction override such as U+202E, a zero-width or other invisible character, a line or paragraph separator, a space other than U+0020)';
/** identifier(max): a name or id that arrives. */
const SEEN_IDENTIFIER = `${SEEN_CHARACTERS}: the server refuses these (400).`;
/** requestIdentifier(max): an identifier in NFC (two spellings of one text would be two requests). */
const REQUEST_IDENTIFIER = `${SEEN_CHARACTERS}; and in Unicode normal form NFC (send value.normalize("NFC")): the server refuses anything else (400).`;
/** recordedIdentifier(max): a name or id looked up as recorded. */
const RECORDED_IDENTIFIER = 'No control characters, no space at either end and no lone UTF-16 surrogate: the server refuses these (400).';
/** freeText(max). */
const FREE_TEXT = 'Tab and line breaks are the only control characters taken, and no lone UTF-16 surrogate: the server refuses others (400).';

// Not `case:` or `reapproval:`: the service derives those itself, and a caller who took one first would bind its
// payload in place of the case's decision or the re-approval (I5).
const requestId = requestIdentifier(200)
  .refine((value) => reservedRequestProblem(value) === null, { error: (issue) => reservedRequestProblem(String(issue.input)) ?? 'is reserved' })
  .meta({ description: `A stable id of the approved request (the support case); the effect id is derived from it, so retries reuse it. It may not start with \`case:\` or \`reapproval:\` (the request ids of cases and re-approvals, which the service derives itself). ${REQUEST_IDENTIFIER}` });
const approvalId = z.string({ error: 'must be a string' }).regex(APPROVAL_ID, 'must be 1-200 letters, digits or _ . : -');
/** personName(max): a person's name, in the letters of one script (mixedScriptProblem in src/core/text.ts). */
const ONE_SCRIPT = 'Its letters are of one script, read with compatibility forms folded (digits, spaces, ASCII punctuation, apostrophes, the hyphen ‐, the middle dot ·, accents and emoji go with any; Japanese kanji and kana, Chinese with Bopomofo and Korean hanja and hangul may each go with Latin as words of their own): a name mixing scripts, or holding a symbol of no script, can read as another person\'s (`bօb` with an Armenian `օ`, `⍺lex` with APL\'s alpha), and the server refuses it (400).';
const agent = personName(100).meta({ description: `Who decided (a person or a model); defaults to the token name. ${ONE_SCRIPT} ${SEEN_IDENTIFIER}` });
const decision = z
  .strictObject({
    model: identifier(200).meta({ description: `The model (or person) that decided. ${SEEN_IDENTIFIER}` }),
    text: freeText(PROPOSAL_LIMITS.decisionChars).meta({ description: `What it said, recorded in the receipt. ${FREE_TEXT}` }),
  })
  .meta({ description: 'The decision as made, kept in the PROPOSED entry.' });
const scope = z.string({ error: 'must be a string' }).regex(APPROVAL_SCOPE, 'must name one payment or customer, e.g. payment:pi_123 or customer:cus_123');
/**
 * How every amount and cap a person sends or reads is counted, said in each one's description: Stripe's count, in the
 * smallest unit of the payment's (or the customer's credits') currency, which for a zero-decimal currency is the
 * whole unit. "Cents" alone leads the approver of a ¥500 refund to type 50000. The `_cents` field names stay: they are the contract.
 */
const SMALLEST_UNIT = 'as Stripe counts amounts: 2000 is $20.00 in usd, ¥2000 in jpy (a zero-decimal currency: not ¥20)';
/**
 * A whole number of cents from `least` (0, or 1: more than zero) to `most`. As the effects' amounts (src/core/effects.ts),
 * the range is checked first and ends the checks: zod's int() also refuses a number past 2^53 as not whole, and 1e20
 * is whole, only too large.
 */
const cents = (what: string, least: 0 | 1, most: number) => {
  const number = z.number({ error: 'must be a number of cents' });
  const fromLeast = least === 0 ? number.min(0, { error: 'must be zero or more cents', abort: true }) : number.positive({ error: 'must be more than zero cents', abort: true });
  return fromLeast.max(most, { error: `must be at most ${most} cents`, abort: true }).int('must be a whole number of cents').meta({ description: what });
};

export const refundBody = z
  .strictObject({
    request_id: requestId,
    payment_intent: refundEffectSchema.shape.paymentIntent,
    amount: refundEffectSchema.shape.amount.meta({ description: `What to refund, in the smallest unit of the payment's currency, ${SMALLEST_UNIT}.` }),
    approval: approvalId.meta({ description: 'The approval (lease) this refund is sent under; it must cover payment:<payment_intent>.' }),
    agent: agent.optional(),
    reason: refundEffectSchema.shape.reason,
    decision: decision.optional(),
  })
  .meta({ id: 'RefundRequest', description: 'A refund to propose; its premises are read from Stripe when it arrives.' });

export const creditBody = z
  .strictObject({
    request_id: requestId,
    customer: creditEffectSchema.shape.customer,
    amount: creditEffectSchema.shape.amount.meta({ description: `What to credit to the customer balance, in the smallest unit of the currency credits are given in (INTERLOCK_CREDIT_CURRENCY), ${SMALLEST_UNIT}.` }),
    incident: creditEffectSchema.shape.incident.meta({ description: 'The incident this credit compensates.' }),
    approval: approvalId.meta({ description: 'The approval this credit is sent under; it must cover customer:<customer>.' }),
    agent: agent.optional(),
    description: creditEffectSchema.shape.description.meta({ description: `The description Stripe keeps on the customer balance transaction. ${FREE_TEXT}` }),
    decision: decision.optional(),
  })
  .meta({ id: 'CreditRequest', description: 'A customer balance credit to propose.' });

/** The longest case id whose request id `case:<case_id>` is a request id (200 characters at most). */
const CASE_ID_MAX = 200 - RESERVED_REQUEST_PREFIXES.case.length;

export const caseBody = z
  .strictObject({
    // As parseCaseSubmission (src/core/cases.ts) holds it: `case:<case_id>` must fit a request id's 200 characters.
    case_id: z
      .string({ error: 'must be a string' })
      .regex(CASE_ID, { error: 'must be 1-200 letters, digits or _ . : # -', abort: true })
      .max(CASE_ID_MAX, `must be at most ${CASE_ID_MAX} characters: its effect is requested as case:<case id>, and a request id has at most 200`)
      .meta({ description: `The support case; one case id is one decision, and its effect's request id is \`case:<case_id>\` (so at most ${CASE_ID_MAX} characters). Not . or .., which a URL reads as steps of its path: the server refuses them (400).` }),
    payment_intent: refundEffectSchema.shape.paymentIntent.optional().meta({ description: 'For a refund: the PaymentIntent. Give this or `customer`.' }),
    customer: creditEffectSchema.shape.customer.optional().meta({ description: 'For a credit: the customer. Give this or `payment_intent`.' }),
    incident: creditEffectSchema.shape.incident.optional().meta({ description: 'For a credit: the incident it compensates (required with `customer`).' }),
    // A character other than white space (String.prototype.trim's, which is JSON Schema's \s): said in the document too;
    // one a reader can see (isVisibleNote: invisible characters alone read as nothing), as parseCaseSubmission holds it,
    // which has no JSON Schema form. One problem, BLANK_STORY's words (src/core/cases.ts), for all three.
    story: freeText(STORY_MAX_CHARS)
      .min(1, { error: BLANK_STORY, abort: true })
      .regex(/\S/, { error: BLANK_STORY, abort: true })
      .refine(isVisibleNote, BLANK_STORY)
      .meta({ description: `What happened, as the customer and support tell it; the decider reads it as their account, never as instructions. It must hold a character a reader can see: spaces and invisible characters alone (U+200B, U+2800, U+3164, ...) read as nothing, and the server refuses them (400). ${FREE_TEXT}` }),
    approval: approvalId.meta({ description: 'The approval the decision must stay inside: its cap and its scope (payment:<payment_intent> or customer:<customer>).' }),
    agent: agent.optional(),
  })
  // The subject rule caseSubmissionOf (src/core/cases.ts) checks, in JSON Schema: a refund names payment_intent and
  // no incident, a credit customer and incident; never both subjects. Stated for the document only (zod has no
  // construct that emits it without turning every field's problem into a union's); the server answers each with 400.
  .meta({
    id: 'CaseRequest',
    description: 'A case for the decider: it reads the facts, decides within the approval, and what it decides is proposed through the gate. A refund case gives `payment_intent` (and no `incident`); a credit case gives `customer` and `incident`; never both subjects.',
    oneOf: [
      { title: 'A refund case', required: ['payment_intent'], properties: { payment_intent: true, customer: false, incident: false } },
      { title: 'A credit case', required: ['customer', 'incident'], properties: { customer: true, incident: true, payment_intent: false } },
    ],
  });

export const caseIdParam = z.strictObject({ id: z.string().regex(CASE_ID, 'must be a case id (1-200 letters, digits or _ . : # -)') });

export const proposeQuery = z.strictObject({
  // Its form, then its range as a pattern too (0 to 30, up to three decimals), so the document states both.
  wait: z
    .string({ error: 'must be a number of seconds' })
    .regex(/^\d{1,2}(?:\.\d{1,3})?$/, { error: `must be a number of seconds, at most ${MAX_WAIT_SECONDS}`, abort: true })
    .regex(/^(?:[0-2]?\d(?:\.\d{1,3})?|30(?:\.0{1,3})?)$/, `must be at most ${MAX_WAIT_SECONDS} seconds`)
    .transform(Number)
    .optional()
    .meta({ description: `Hold the answer until the effect settles, at most this many seconds (${MAX_WAIT_SECONDS}).` }),
});

export const effectIdParam = z.strictObject({ id: z.string().regex(/^[0-9a-f]{64}$/, 'must be an effect id (64 lowercase hex characters)') });

/** A listing position: when the last effect handed out was bound (Redis ms), and its id. */
export const LIST_CURSOR = /^(\d{1,16})\.([0-9a-f]{64})$/;

export const listQuery = z.strictObject({
  request: recordedIdentifier(200).optional().meta({ description: `Only the effect of this request id. ${RECORDED_IDENTIFIER}` }),
  subject: scope.optional().meta({ description: 'Only effects on this payment or customer (payment:pi_… or customer:cus_…).' }),
  state: z.enum(EFFECT_STATES).optional(),
  outcome: z.enum(EFFECT_OUTCOMES as [string, ...string[]]).optional().meta({ description: 'Only effects settled with this outcome.' }),
  // Its form, then its range as patterns too (at least 1: a digit other than 0; at most 100), so the document states both.
  limit: z
    .string()
    .regex(/^\d{1,3}$/, { error: `must be a whole number from 1 to ${MAX_LIST_LIMIT}`, abort: true })
    .regex(/[1-9]/, 'must be at least 1')
    .regex(/^(?:\d{1,2}|0\d\d|100)$/, `must be at most ${MAX_LIST_LIMIT}`)
    .transform(Number)
    .optional()
    .meta({ description: `Page size, 1 to ${MAX_LIST_LIMIT} (default 10).` }),
  starting_after: z.string().regex(LIST_CURSOR, 'must be the next_starting_after of a previous page').optional().meta({ description: 'The `next_starting_after` of the previous page.' }),
});

export const approvalBody = z
  .strictObject({
    // As the gate's own grant refuses them, in its words. Only a new
    // grant: an approval stored under . or .. before is still named in a proposal and read (approvalIdParam).
    id: approvalId
      .superRefine((value, context) => {
        const problem = newApprovalIdProblem(value);
        if (problem !== null) context.addIssue({ code: 'custom', message: problem });
      })
      .meta({ description: 'The approval id, 1-200 letters, digits or _ . : - (not . or .., which a URL reads as steps of its path: the server refuses them, 400).' }),
    approver: personName(200).meta({ description: `The person or policy that approves. ${ONE_SCRIPT} ${SEEN_IDENTIFIER}` }),
    cap_cents: cents(`The most all effects under it may move together, in the smallest unit of the currency of the payment (or of the customer's credits) it covers, ${SMALLEST_UNIT}.`, 1, Number.MAX_SAFE_INTEGER),
    scope: scope.meta({ description: 'What it covers: payment:pi_… or customer:cus_….' }),
    // The range first, as cents: 1e20 uses is too many, not a fraction.
    max_uses: z
      .number({ error: 'must be a whole number' })
      .min(1, { error: 'must be at least 1', abort: true })
      .max(GRANT_LIMITS.maxUses, { error: `must be at most ${GRANT_LIMITS.maxUses}`, abort: true })
      .int('must be a whole number')
      .optional()
      .meta({ description: 'How many effects may use it (default 1).' }),
    expires_in: z
      .number({ error: 'must be a number of seconds' })
      .min(1, { error: 'must be at least 1 second', abort: true })
      .max(MAX_EXPIRES_IN_SECONDS, { error: `must be at most ${MAX_EXPIRES_IN_SECONDS} seconds`, abort: true })
      .int('must be a whole number of seconds')
      .optional()
      .meta({ description: 'Lifetime in seconds (default 3600).' }),
    four_eyes: z.boolean({ error: 'must be true or false' }).optional().meta({ description: 'When true, nobody named as its approver (or the token that granted it) may propose under it.' }),
  })
  .meta({ id: 'ApprovalRequest' });

export const approvalIdParam = z.strictObject({ id: approvalId });

// Where to look for an approval besides its id's binding (the index's slot): on a Redis Cluster a failover of the index's
// master can lose the binding while the approval stands on its subject, still authorizing money (approvals.notFound).
const approvalSubject = scope.optional().meta({
  description: "The approval's scope (payment:pi_… or customer:cus_…): it is looked for on that subject, whatever its id is bound to. Needed only when its id is bound to nothing (404 saying so), which a failover of a Redis Cluster's master can leave while the approval still stands on its subject and still authorizes refunds.",
});
export const approvalQuery = z.strictObject({ subject: approvalSubject });
export const revokeBody = z
  .strictObject({ subject: approvalSubject })
  .meta({ id: 'RevokeRequest', description: 'Empty, or the subject to find the approval on: the revoking token is recorded as who revoked. An approval found on its subject whose id is bound to nothing is bound to it again.' });

export const capBody = z.strictObject({ cap_cents: cents(`The cap, in the smallest unit of the subject's currency, ${SMALLEST_UNIT}; 0 stops all money on the subject.`, 0, Number.MAX_SAFE_INTEGER) }).meta({ id: 'CapRequest' });
export const subjectParam = z.strictObject({ subject: scope });

/** Alerts a page when `limit` is not given (GET /v1/alerts): every open alert at once in the common case. */
export const DEFAULT_ALERTS_LIMIT = 100;

export const alertsQuery = z.strictObject({
  all: z.enum(['true', 'false']).optional().meta({ description: 'Also resolved alerts.' }),
  limit: listQuery.shape.limit.meta({ description: `Page size, 1 to ${MAX_LIST_LIMIT} (default ${DEFAULT_ALERTS_LIMIT}).` }),
  starting_after: z.string().regex(ALERT_CURSOR, 'must be the next_starting_after of a previous page').optional().meta({ description: 'The `next_starting_after` of the previous page.' }),
});

export const alertsList = z
  .object({ object: z.literal('list'), url: z.string(), data: z.array(z.unknown()), has_more: z.boolean(), next_starting_after: z.string().nullable() })
  .meta({ id: 'AlertList', description: 'A page of alerts; pass `next_starting_after` as `starting_after` for the next one (null on the last).' });

export const recoverBody = z.strictObject({}).meta({ id: 'RecoverRequest' });

// The escalation inbox (issue 13 §4).
export const MAX_NOTE_CHARS = 2_000;
// Not empty, and a character other than white space, in the document as in the server (one problem, BLANK_NOTE, as
// isVisibleNote alone gave); the invisible characters isVisibleNote also refuses have no JSON Schema form.
const note = freeText(MAX_NOTE_CHARS)
  .min(1, { error: BLANK_NOTE, abort: true })
  .regex(/\S/, { error: BLANK_NOTE, abort: true })
  .refine(isVisibleNote, BLANK_NOTE)
  .meta({
    description: `What the person checked or did, recorded in the signed RESOLVED entry (a failed case's item, which has no effect, keeps it in its closure in the inbox index). It must hold a character a reader can see: spaces and invisible characters alone (U+200B, U+2800, U+3164, ...) read as nothing, and the server refuses them (400). ${FREE_TEXT}`,
  });
export const inboxItemParam = z.strictObject({
  id: z.string().regex(/^(?:[a-z_]{1,40}:[0-9a-f]{64}|case_failed:[0-9a-f]{64}:\d{1,16})$/, 'must be an inbox item id (<kind>:<effect id>, or case_failed:<case effect id>:<failed at>)'),
});
export const inboxQuery = z.strictObject({
  status: z.enum(['open', 'closed']).optional().meta({ description: 'Open items (default), or closed ones (newest closure first).' }),
  kind: z.enum(INBOX_KINDS).optional(),
  subject: scope.optional().meta({ description: 'Only items on this payment or customer.' }),
  effect: z.string().regex(/^[0-9a-f]{64}$/, 'must be an effect id (64 lowercase hex characters)').optional().meta({ description: 'Only the items of this effect.' }),
  limit: listQuery.shape.limit,
  starting_after: z.string().regex(INBOX_CURSOR, 'must be the next_starting_after of a previous page').optional().meta({ description: 'The `next_starting_after` of the previous page.' }),
});
const factsShownField = z
  .string()
  .regex(FACTS_SHOWN, 'must be the facts_shown of the item as it was read (16 lowercase hex characters)')
  .meta({
    description:
      "The item's `facts_shown` as it was read (GET /v1/inbox/:id, the listing): the re-approval stands on the facts that view showed, and is refused 409 `facts_changed`, nothing recorded, when the item shows other facts by then (it was brought up to date since, after a re-approval found the facts changed); read it again. Without it, the facts the item shows at the moment of the request are taken as the ones the caller read, whatever it showed when they read it. The page's form always sends it.",
  });
export const reapproveBody = z
  .strictObject({
    approval: approvalId.meta({ description: 'The NEW approval the new request is proposed under; it must cover the item\'s subject.' }),
    note: note.optional(),
    facts_shown: factsShownField.optional(),
  })
  .meta({ id: 'ReapproveRequest', description: 'A new request (its id derived from the item) under a new approval, its premises read now, through the gate.' });
/** The page's re-approve form: its `facts_shown` is always sent (a hidden field drawn with the item it shows). */
export const reapproveForm = reapproveBody.required({ facts_shown: true });
export const resolveBody = z
  .strictObject({
    resolution: z.enum(['landed', 'did_not_land']).meta({ description: 'What Stripe shows, after checking it: the effect landed, or it did not.' }),
    note,
  })
  .meta({ id: 'ResolveRequest' });
export const dismissBody = z.strictObject({ note }).meta({ id: 'DismissRequest' });

// Responses (documentation only).
/** How every answer's links are given (effect-view.ts linkFor), said in each links object's description. */
const LINKS_RULE = "A link is null when the caller's role may not read the route it names (the route's `x-roles`), so following any link an answer gives is never answered 403.";
const link = z.string().nullable();
const links = z.object({ self: link, receipt: link }).meta({ description: `The effect (GET /v1/effects/{id}) and its signed receipt (GET /v1/effects/{id}/receipt). ${LINKS_RULE}` });
const reason = z.string().nullable().meta({ description: 'Why a refused or ambiguous effect settled so, in the gate\'s words (the amount over the cap, the fact that changed); null otherwise.' });
export const proposalAnswer = z
  .object({
    effect_id: z.string(),
    request_id: z.string(),
    state: z.enum(EFFECT_STATES),
    outcome: z.string().nullable().meta({ description: 'The outcome code (DESIGN §4), null until settled.' }),
    sentence: z.string(),
    reason,
    links,
  })
  .meta({ id: 'ProposalAnswer' });

const caseMoneyAnswer = z.enum(['returned', 'not_returned', 'pending', 'unknown']).nullable().meta({ description: 'Whether the money went back, as the receipt answers (the gate\'s outcome, or a person\'s finding on an AMBIGUOUS effect).' });
const caseEffect = z.object({
  effect_id: z.string(),
  state: z.enum(EFFECT_STATES),
  outcome: z.string().nullable(),
  sentence: z.string(),
  reason,
  amount: z.number().nullable(),
  final_money: z.record(z.string(), z.unknown()),
  answer: caseMoneyAnswer,
  answer_from: z.enum(['gate', 'operator']).nullable(),
  answer_matches_final_money: z.boolean().nullable(),
  exposure: z.record(z.string(), z.unknown()).nullable(),
  links,
});
export const caseAnswer = z
  .object({
    object: z.literal('case'),
    id: z.string(),
    kind: z.enum(['refund', 'credit']),
    payment_intent: z.string().nullable(),
    customer: z.string().nullable(),
    incident: z.string().nullable(),
    approval: z.string(),
    agent: z.string(),
    state: z.enum(CASE_STATES),
    outcome: z.string().nullable().meta({ description: 'DECLINED, MODEL_DEVIATED, the error code of a failed case, or the effect\'s outcome once proposed and settled (the re-approved effect\'s, once a person re-approved the case\'s refused effect); null while undecided or unsettled.' }),
    sentence: z.string(),
    final_money: z.record(z.string(), z.unknown()).nullable().meta({ description: 'What became of the money, for the effect `outcome` answers, as its receipt derives it (status returned, not_returned, pending or unknown): a refund Stripe accepted and then failed is COMMITTED with final money not_returned. Null before that effect settled.' }),
    answer: caseMoneyAnswer,
    decision: z.object({ model: z.string(), text: z.string(), action: z.enum(['refund', 'credit', 'decline']), amount_cents: z.number().nullable() }).nullable(),
    problems: z.array(z.string()).meta({ description: 'Why the decision was not proposed (MODEL_DEVIATED).' }),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    attempts: z.number(),
    effect: caseEffect.nullable().meta({ description: 'The proposed effect as it stands.' }),
    reapprovals: z
      .array(z.object({ item: z.string(), approval: z.string(), by: z.string(), at: z.string(), request_id: z.string(), effect_id: z.string(), effect: caseEffect.nullable().meta({ description: 'Null until the re-approval\'s proposal is recorded.' }) }))
      .meta({ description: 'Re-approvals a person made from the inbox of the case\'s refused effect (and of a re-approved effect refused again), in order; the last one\'s effect is the one `outcome` answers.' }),
    created_at: z.string(),
    updated_at: z.string(),
    links: z
      .object({ self: link, effect: link, inbox: link, reapproved: link })
      .meta({ description: `\`inbox\`: the item a person acts on, for a deviated case (model_deviated) or a failed one (case_failed, once its item is open); null otherwise. \`reapproved\`: the effect the last re-approval proposed. ${LINKS_RULE}` }),
  })
  .meta({ id: 'Case' });

const journalEntry = z.object({ kind: z.string(), code: z.string().optional().meta({ description: "A REFUSED entry's outcome code: after a COMMITTED, REFUSED:conflicting_payload is another payload refused under the request id (evidence), not the effect refused." }), at: z.string().meta({ description: 'ISO time (Redis clock).' }), at_ms: z.number() });
export const effectSummary = z
  .object({
    object: z.literal('effect'),
    id: z.string(),
    request_id: z.string().nullable(),
    kind: z.string().nullable(),
    subject: z.string(),
    amount: z.number().nullable().meta({ description: `In the smallest unit of \`currency\`, ${SMALLEST_UNIT}.` }),
    currency: z.string().nullable().meta({ description: "The amount's currency (lowercase ISO code): what Stripe answered, else the premise read, else for a credit the configured INTERLOCK_CREDIT_CURRENCY; null for a refund recorded before effects kept one." }),
    agent: z.string().nullable(),
    approval: z.string().nullable(),
    state: z.enum(EFFECT_STATES),
    outcome: z.string().nullable(),
    sentence: z.string(),
    reason,
    settled: z.boolean(),
    created_at: z.string().nullable(),
    links,
  })
  .meta({ id: 'EffectSummary' });
export const effectDetail = effectSummary
  .extend({
    journal: z.array(journalEntry),
    final_money: z.record(z.string(), z.unknown()),
    exposure: z.record(z.string(), z.unknown()).nullable(),
    answer: z.enum(['returned', 'not_returned', 'pending', 'unknown']).nullable().meta({ description: 'Whether the money went back, as the receipt answers: from the gate\'s outcome, or a person\'s finding on an AMBIGUOUS effect; null while nobody can say.' }),
    answer_from: z.enum(['gate', 'operator']).nullable().meta({ description: 'Whose word `answer` is.' }),
    answer_matches_final_money: z.boolean().nullable().meta({ description: 'Whether what Stripe holds now agrees with `answer`; null while either is unknown.' }),
    receipt_valid: z.boolean().nullable(),
  })
  .meta({ id: 'Effect' });
export const effectList = z
  .object({ object: z.literal('list'), url: z.string(), data: z.array(effectSummary), has_more: z.boolean(), next_starting_after: z.string().nullable() })
  .meta({ id: 'EffectList' });
export const approvalAnswer = z
  .object({
    object: z.literal('approval'),
    id: z.string(),
    approver: z.string(),
    cap_cents: z.number().meta({ description: `In the smallest unit of the scope's currency, ${SMALLEST_UNIT}; reserved_cents and cents_left likewise.` }),
    scope: z.string(),
    max_uses: z.number(),
    expires_at: z.string(),
    four_eyes: z.boolean(),
    granted_by: z.string().nullable(),
    revoked: z.boolean(),
    revoked_at: z.string().nullable(),
    revoked_by: z.string().nullable().meta({ description: 'Who revoked it (the caller\'s token name, or the CLI\'s `--by`); null while it is not revoked, or when no name was recorded.' }),
    reserved_cents: z.number(),
    uses: z.number(),
    live: z.boolean().meta({ description: 'Unrevoked and unexpired; it may still have no uses or cents left.' }),
    uses_left: z.number(),
    cents_left: z.number().meta({ description: 'What the cap has not reserved: what effects under it may still move together.' }),
    subject_cents_left: z.number().nullable().meta({ description: "What may still move on the approval's scope under the cap every agent shares there (`PUT /v1/caps/{subject}`), whatever approval it goes under; null when no such cap is set." }),
    usable: z.boolean().meta({ description: "Live, with a use and a cent left, and a cent left under its scope's shared cap if one is set: one more effect could go under it." }),
  })
  .meta({ id: 'Approval' });
export const revokeAnswer = z
  .object({ object: z.literal('revocation'), id: z.string(), revoked_at: z.string(), already_revoked: z.boolean(), revoked_by: z.string().nullable().meta({ description: 'Who revoked it: this caller, or whoever revoked it first when it was already revoked.' }), may_still_land: z.array(z.object({ effect_id: z.string(), links })), sentence: z.string() })
  .meta({ id: 'Revocation' });
export const capAnswer = z.object({ object: z.literal('cap'), subject: z.string(), cap_cents: z.number().meta({ description: `In the smallest unit of the subject's currency, ${SMALLEST_UNIT}; moved_cents likewise.` }), moved_cents: z.number(), sentence: z.string().meta({ description: 'What may still move on the subject, or that nothing may when the cap is at or below what has moved.' }) }).meta({ id: 'Cap' });
// `status` says which key signs now and which only verify receipts signed before a rotation (retired).
export const keysAnswer = z.object({ keys: z.array(z.object({ kid: z.string(), pem: z.string(), status: z.enum(['current', 'retired']) })) }).meta({ id: 'PublicKeys' });
export const listAnswer = z.object({ object: z.literal('list'), data: z.array(z.unknown()) }).meta({ id: 'List' });
export const receiptAnswer = z.object({ format: z.string(), effectId: z.string(), entries: z.array(z.unknown()), head: z.unknown() }).meta({ id: 'Receipt', description: 'The signed bundle, as `interlock receipt verify` reads it.' });
export const healthAnswer = z.object({ status: z.string(), checks: z.array(z.object({ name: z.string(), ok: z.boolean(), detail: z.string().nullable(), advisory: z.literal(true).optional().meta({ description: 'A failed check that does not make the process unready (Stripe not answering).' }) })).optional() }).meta({ id: 'Health' });
export const recoverAnswer = z.object({ object: z.literal('recovery'), report: z.unknown() }).meta({ id: 'RecoveryReport' });
export const recoverQueuedAnswer = z
  .object({
    object: z.literal('recovery_queued'),
    job_id: z.string().meta({ description: "The pass job's id on the recovery queue: the log line of the worker process that runs it names it, with what the pass settled." }),
    sentence: z.string(),
  })
  .meta({ id: 'RecoveryQueued' });
const change = z.object({ field: z.string(), was: z.unknown(), now: z.unknown() });
export const inboxItemAnswer = z
  .object({
    object: z.literal('inbox_item'),
    id: z.string(),
    kind: z.enum(INBOX_KINDS).meta({ description: 'case_failed: a support case the decisions worker wrote failed (nothing proposed); no effect stands behind it, so it is only dismissed, in the inbox index.' }),
    effect_id: z.string().meta({ description: 'The effect the item is about; for case_failed, the effect id the case proposes under (request case:<case id>), which no failed case has recorded.' }),
    subject: z.string(),
    outcome: z.string().nullable(),
    happened: z.string(),
    cents_at_stake: z.number().meta({ description: `What a person's decision is about (the effect's amount, or an exposure's total), in the smallest unit of \`currency\`, ${SMALLEST_UNIT}.` }),
    currency: z.string().nullable().meta({ description: "The currency of `cents_at_stake` (lowercase ISO code): an exposure's is its alert's, any other item's its effect's (the premise it was decided on, else for a credit the configured INTERLOCK_CREDIT_CURRENCY). Null when nothing recorded says it (an item opened before items kept one, and a case_failed item, at stake 0): read it as a currency unknown, never as dollars." }),
    changes: z.array(change).meta({ description: 'The facts that changed, as the premise check recorded them (was -> now).' }),
    actions: z.array(z.enum(OPERATOR_ACTIONS)).meta({ description: 'What a person may do with it.' }),
    facts_shown: z
      .string()
      .nullable()
      .meta({ description: 'A fingerprint of the facts the item shows (those its effect was decided on, with `changes` as listed), to give back as the re-approval\'s `facts_shown`: the re-approval is then refused if the item shows other facts by the time it is made. Null when the item offers no re-approval (closed, or `actions` lacks reapprove), and on the items of an action\'s answer.' }),
    detail: z.record(z.string(), z.unknown()).nullable(),
    status: z.enum(['open', 'closed']),
    opened_at: z.string(),
    closed: z
      .object({
        action: z.enum(OPERATOR_ACTIONS),
        by: z.object({ name: z.string(), role: z.string() }),
        note: z.string(),
        resolution: z.enum(['landed', 'did_not_land']).nullable(),
        reapproval: z.object({ approval: z.string(), request_id: z.string(), effect_id: z.string() }).nullable(),
        at: z.string(),
        unsigned: z.string().nullable().meta({ description: 'Why no signed entry stands behind this closure (the effect\'s journal was gone when it was dismissed, so it is kept in the inbox index only, on no receipt); null when a signed RESOLVED entry on the effect\'s receipt stands behind it, and for a case_failed item (which never has a receipt).' }),
      })
      .nullable(),
    links: z
      .object({ self: link, effect: link, receipt: link, case: link.optional() })
      .meta({ description: `The item, its effect and receipt; a case_failed item has neither (null) and links its case instead (\`case\`, only on such items). ${LINKS_RULE}` }),
  })
  .meta({ id: 'InboxItem' });
export const inboxList = z
  .object({ object: z.literal('list'), url: z.string(), data: z.array(inboxItemAnswer), has_more: z.boolean(), next_starting_after: z.string().nullable() })
  .meta({ id: 'InboxList' });
export const reapproveAnswer = z
  .object({
    object: z.literal('reapproval'),
    item: inboxItemAnswer,
    effect_id: z.string(),
    request_id: z.string(),
    recorded: z.enum(['recorded', 'exists']).meta({ description: 'Recorded now, or recorded before (a retry by the same person under the same approval).' }),
    premises: z.record(z.string(), z.unknown()).meta({ description: 'The facts the new request was proposed on: read now, or for a repeat as recorded the first time; the gate re-reads them before it sends.' }),
    links,
  })
  .meta({ id: 'Reapproval' });
const ERROR_CODES = Object.keys(ERROR_REGISTRY) as [ErrorCode, ...ErrorCode[]];
export const errorAnswer = z
  .object({
    error: z.object({
      code: z.enum(ERROR_CODES).meta({ description: 'The error registry\'s code (src/core/errors.ts); each status\'s description names the codes it answers.' }),
      message: z.string(),
      fields: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    }),
  })
  .meta({ id: 'Error' });

/**
 * What every route that reads a JSON body answers before its handler runs (the body parser's refusals, errors.ts):
 * spread into each such route's responses, so the document lists them wherever they can be answered.
 */
export const bodyErrors = {
  413: { description: 'The body is larger than this service accepts (`payload_too_large`); nothing was read or recorded.', schema: errorAnswer },
  415: { description: 'The body is not JSON in UTF-8 (`unsupported_media_type`: another Content-Type, charset or Content-Encoding); nothing was read or recorded.', schema: errorAnswer },
};

/**
 * What every route that reads or writes Redis answers while Redis refuses, is down or hangs past
 * INTERLOCK_REDIS_COMMAND_TIMEOUT_MS (errors.ts: asApiError), wherever its own 503 does not say more: spread into
 * those routes' responses, so the document lists it wherever it can be answered.
 */
export const redisErrors = {
  503: { description: 'Redis is down, turned the request away or did not answer in time (`redis_unavailable`); nothing was changed. Send it again shortly.', schema: errorAnswer },
};

/** The answer of GET /v1/openapi.json: this document itself, an OpenAPI 3.1 object. */
export const openApiDocument = z.looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.looseObject({}) }).meta({ id: 'OpenApiDocument', description: 'An OpenAPI 3.1 document: this one.' });
