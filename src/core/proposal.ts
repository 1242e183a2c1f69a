// Validation of what callers submit (issue 6, item 1): every field, every string, every nesting level and the
// sizes are checked before anything is written, so a proposal either is recorded whole or leaves no trace. Bad
// input is refused with a ProposalError that names each field.
import { z } from 'zod';
import { parseEffect, EffectError, type Effect } from './effects.js';
import { InterlockError, zodFieldProblems, type FieldProblem } from './errors.js';
import { assertJson, canonicalLength, nestsDeeperThan, NonCanonicalValueError, type Json, type JsonObject } from './json.js';
import { freeText, identifier, isFreeText, isIdentifier, isRequestId, mixedScriptProblem, personName, recordedIdentifier, requestIdentifier } from './text.js';
import type { Decision } from './entries.js';

export type Proposal = {
  requestId?: string;
  agent: string;
  approval: string;
  premises: JsonObject;
  effect: JsonObject;
  request?: Json;
  decision?: Decision;
};

/** Limits on what a proposal may carry. Premises and request are facts and context, not documents. */
export const PROPOSAL_LIMITS = { premiseDepth: 8, premiseChars: 16_000, requestDepth: 8, requestChars: 16_000, decisionChars: 20_000, totalChars: 64_000 } as const;

/**
 * Request ids the service derives itself: a case's (`case:<case id>`, decider/check.ts) and an inbox item's
 * re-approval (`reapproval:<item id>`, core/inbox.ts). The first PROPOSED under a request id binds its payload (I5),
 * so a caller who recorded one of them first would take the case's or the re-approval's place: the routes and
 * commands that take a request id from a caller refuse these prefixes (reservedRequestProblem).
 */
export const RESERVED_REQUEST_PREFIXES = { case: 'case:', reapproval: 'reapproval:' } as const;

/** Why a caller may not propose under `requestId` (it starts with a reserved prefix), or null when it may. */
export function reservedRequestProblem(requestId: string): string | null {
  const prefix = Object.values(RESERVED_REQUEST_PREFIXES).find((reserved) => requestId.startsWith(reserved));
  if (prefix === undefined) return null;
  return `may not start with "${prefix}": the service derives the request ids of cases (case:<case id>) and re-approvals (reapproval:<item id>) itself, and one recorded in advance would take their place; use another request id`;
}

export const APPROVAL_ID = /^[A-Za-z0-9_.:-]{1,200}$/;

/**
 * Why `id` may not name a new approval, or null when it may. "." and ".." are approval ids by APPROVAL_ID, but a URL
 * reads them as steps of its path (%2E too), so /v1/approvals/../revoke never reaches the approval, as with case ids
 * (core/cases.ts). Only a grant is refused: an approval stored under one before stays readable, usable and revocable
 * (`interlock approvals revoke ..`), and a request already proposed under it is answered when sent again.
 */
export function newApprovalIdProblem(id: string): string | null {
  if (id !== '.' && id !== '..') return null;
  return 'may not be . or ..: a URL reads them as steps of its path, so the approval\'s own links (/v1/approvals/<id> and its revoke) could never reach it; use another id';
}
export const PREMISE_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
const PREMISE_NAME_RULE = 'premise names are a letter then up to 63 letters, digits or _';

const json = z.custom<unknown>(() => true);

export const proposalSchema = z.strictObject({
  requestId: requestIdentifier(200).optional(),
  agent: personName(200),
  approval: z.string({ error: 'must be a string' }).regex(APPROVAL_ID, 'must be 1-200 letters, digits or _ . : -'),
  premises: z.record(z.string().regex(PREMISE_NAME, PREMISE_NAME_RULE), json),
  effect: z.record(z.string(), json),
  request: json.optional(),
  decision: z.strictObject({ model: identifier(200), text: freeText(PROPOSAL_LIMITS.decisionChars) }).optional(),
});

/**
 * A proposal read back from the journal: its request id, agent and model are taken as they were recorded. The NFC
 * and unseen-character rules are for what arrives; a request recorded before them is bound to its effect id
 * already, and refusing it there would leave an accepted request never sent and never refused.
 */
const recordedProposalSchema = proposalSchema.extend({
  requestId: recordedIdentifier(200).optional(),
  agent: recordedIdentifier(200),
  decision: z.strictObject({ model: recordedIdentifier(200), text: freeText(PROPOSAL_LIMITS.decisionChars) }).optional(),
});

export class ProposalError extends InterlockError {
  constructor(message: string, fields: readonly FieldProblem[] = [], options: { cause?: unknown } = {}) {
    super('invalid_proposal', message, { fields, ...options });
    this.name = 'ProposalError';
  }
}

function refuse(fields: FieldProblem[]): never {
  const detail = fields.map((field) => `${field.path}: ${field.message}`).join('; ');
  throw new ProposalError(`The proposal is invalid (${detail}). Nothing was recorded.`, fields);
}

/** A plain, canonical copy of a JSON field, bounded in depth and size; problems are collected, not thrown. */
function boundedJson(value: unknown, path: string, limits: { depth: number; chars: number }, problems: FieldProblem[]): Json | undefined {
  let plain: Json;
  try {
    plain = assertJson(value, path);
  } catch (error) {
    if (error instanceof NonCanonicalValueError) problems.push({ path: error.path.replace(/^\$\.?/, '') || path, message: error.message });
    else problems.push({ path, message: error instanceof Error ? error.message : String(error) });
    return undefined;
  }
  if (nestsDeeperThan(plain, limits.depth)) problems.push({ path, message: `nests deeper than ${limits.depth} levels` });
  else if (canonicalLength(plain) > limits.chars) problems.push({ path, message: `is larger than ${limits.chars} characters of JSON` });
  return plain;
}

export function parseProposal(input: unknown): Proposal {
  return parseProposalAndEffect(input).proposal;
}

type Fields = z.infer<typeof proposalSchema>;
/** `recorded`: the input was read back from the journal (recordedProposalSchema says what that changes). */
export type ParseOptions = { recorded?: boolean };
const FIELDS = new Set(['requestId', 'agent', 'approval', 'premises', 'effect', 'request', 'decision']);
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The schema's checks by hand, for input that passes them all (nearly every proposal); anything else goes through
 * the schema, which names each problem. Every submit passes here, and the schema cost more than the rest of it.
 */
export function quickFields(input: unknown, options: ParseOptions = {}): Fields | null {
  if (!isRecord(input)) return null;
  for (const key of Object.keys(input)) if (!FIELDS.has(key)) return null;
  const { requestId, agent, approval, premises, effect, decision } = input;
  const recorded = options.recorded === true;
  if (requestId !== undefined && !(recorded ? isIdentifier(requestId, 200, true) : isRequestId(requestId, 200))) return null;
  if (!isIdentifier(agent, 200, recorded) || (!recorded && mixedScriptProblem(agent) !== null) || typeof approval !== 'string' || !APPROVAL_ID.test(approval)) return null;
  if (!isRecord(premises) || !Object.keys(premises).every((name) => PREMISE_NAME.test(name)) || !isRecord(effect)) return null;
  if (decision !== undefined) {
    if (!isRecord(decision) || !Object.keys(decision).every((key) => key === 'model' || key === 'text') || !isIdentifier(decision.model, 200, recorded) || !isFreeText(decision.text, PROPOSAL_LIMITS.decisionChars)) return null;
  }
  return input as Fields;
}

/** The fields a proposal has, and a decision's: read wherever the object holds them (ownFields). */
const PROPOSAL_FIELDS = ['requestId', 'agent', 'approval', 'premises', 'effect', 'request', 'decision'] as const;
const DECISION_FIELDS = ['model', 'text'] as const;

/**
 * The object's fields, each read exactly once, in a plain object: the `known` ones wherever the object holds them (an
 * own field, a getter of its class, an inherited or non-enumerable one, as a plain read finds them: a request id
 * dropped for not being an own field would key the effect by its payload instead, and the same request sent again
 * as plain data would be a second effect), then its other own enumerable fields, for the schema to refuse by name. A
 * caller's getter or proxy may answer differently on each read: a request id read once as 'case-café' (NFC, checked)
 * and then as its NFD spelling would be recorded and keyed unchecked, a second effect for one request. Everything
 * after this reads the copy only. A field that throws when read is refused by name.
 */
function ownFields(value: Record<string, unknown>, path: string, known: readonly string[]): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  let key = '';
  try {
    // One plain read each, whatever `in` would say (a proxy's `has` may disagree with its `get`): absent is undefined.
    for (key of known) {
      const item = value[key];
      if (item !== undefined) copy[key] = item;
    }
    for (key of Object.keys(value)) {
      if (known.includes(key)) continue;
      const item = value[key];
      // Assigning "__proto__" (JSON.parse makes it an own field) would set the copy's prototype and the field would
      // vanish; defined as data, it reaches the schema, which refuses it by name.
      if (key === '__proto__') Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
      else copy[key] = item;
    }
  } catch (error) {
    refuse([{ path: [path, key].filter((part) => part !== '').join('.') || 'proposal', message: `could not be read (${error instanceof Error ? error.message : String(error)}); pass plain data` }]);
  }
  return copy;
}

/**
 * The input as checked and recorded: its top-level fields and the decision's, each read once (ownFields). Premises,
 * effect and request stay the caller's objects here; boundedJson copies each of them once, and only that copy is
 * checked and used. Shallow on purpose: this runs once per effect on the gate's hot path.
 */
function snapshotOf(input: unknown): unknown {
  if (!isRecord(input)) return input;
  const fields = ownFields(input, '', PROPOSAL_FIELDS);
  if (isRecord(fields.decision)) fields.decision = ownFields(fields.decision, 'decision', DECISION_FIELDS);
  return fields;
}

/** parseProposal, also handing back the effect as parsed (so it is parsed once). */
export function parseProposalAndEffect(input: unknown, options: ParseOptions = {}): { proposal: Proposal; effect: Effect } {
  // Every check and the proposal itself use this snapshot only; the caller's object is not read again.
  const raw = snapshotOf(input);
  let p: Fields | null;
  try {
    p = quickFields(raw, options);
  } catch {
    // A premises proxy that throws when its keys are listed: the schema meets it as before.
    p = null;
  }
  if (p === null) {
    const parsed = (options.recorded === true ? recordedProposalSchema : proposalSchema).safeParse(raw);
    if (!parsed.success) refuse(zodFieldProblems(parsed.error.issues));
    p = parsed.data;
  }
  // The JSON fields are read from the snapshot, not from the schema's copy: a copy made by assignment would silently
  // drop a "__proto__" key, which must be refused instead. Both checks passed, so the snapshot is a record with them.
  const fields = raw as { premises: unknown; effect: unknown; request?: unknown };
  const problems: FieldProblem[] = [];
  const premises = boundedJson(fields.premises, 'premises', { depth: PROPOSAL_LIMITS.premiseDepth, chars: PROPOSAL_LIMITS.premiseChars }, problems);
  // The names checked above were the caller's object's; the copy is what is recorded, so its names are checked too.
  if (premises !== undefined) {
    if (!isRecord(premises)) problems.push({ path: 'premises', message: 'must be an object' });
    else for (const name of Object.keys(premises)) if (!PREMISE_NAME.test(name)) problems.push({ path: `premises.${name}`, message: `the key ${PREMISE_NAME_RULE}` });
  }
  const effectJson = boundedJson(fields.effect, 'effect', { depth: 4, chars: PROPOSAL_LIMITS.premiseChars }, problems);
  const request = p.request === undefined ? undefined : boundedJson(fields.request, 'request', { depth: PROPOSAL_LIMITS.requestDepth, chars: PROPOSAL_LIMITS.requestChars }, problems);
  let effect: JsonObject | undefined;
  let typed: Effect | undefined;
  if (effectJson !== undefined) {
    try {
      typed = parseEffect(effectJson, 'effect', options);
      effect = assertJson(typed) as JsonObject;
    } catch (error) {
      if (error instanceof EffectError) problems.push(...error.fields);
      else throw error;
    }
  }
  if (problems.length > 0 || premises === undefined || effect === undefined || typed === undefined) refuse(problems);
  const proposal: Proposal = { agent: p.agent, approval: p.approval, premises: premises as JsonObject, effect };
  if (p.requestId !== undefined) proposal.requestId = p.requestId;
  if (request !== undefined) proposal.request = request;
  if (p.decision !== undefined) proposal.decision = { model: p.decision.model, text: p.decision.text };
  // Every part is plain JSON by now (checked above, or a string held to a canonical form by quickFields or the schema).
  const size = canonicalLength(proposal as unknown as Json);
  if (size > PROPOSAL_LIMITS.totalChars) refuse([{ path: 'proposal', message: `is ${size} characters of JSON; at most ${PROPOSAL_LIMITS.totalChars}` }]);
  return { proposal, effect: typed };
}
