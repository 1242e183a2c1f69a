// Shape of a receipt as read from untrusted JSON. verify() reports a shape problem instead of throwing.
import { z } from 'zod';
import { HEAD_FORMATS, RECEIPT_FORMATS, type Receipt } from './receipt.js';

// Nested values are checked for shape here, and for being JSON at all where verify() rehashes each entry: a value
// with no canonical form fails there with its path, so a second deep walk here would only cost time.
const json = z.unknown();
const jsonObject = z.record(z.string(), z.unknown());

/** Most problems one list of a receipt is said to have: parseReceipt tells the first 10 in all. */
const MAX_LIST_PROBLEMS = 10;

/**
 * A list of `item`s, read as z.array(item) reads it (what it accepts, and the words of its first problems), that stops
 * at its first MAX_LIST_PROBLEMS problems. z.array builds an issue, with its path and message, for every bad element
 * before any can be dropped: a receipt of millions of them (`"entries":[0,0,...]`) took seconds a megabyte and ran a
 * 16 MiB file out of heap. `quick`, a check by hand that accepts nothing `item` refuses, spares the schema every
 * element it passes.
 */
function listOf(item: z.ZodType, quick?: (value: unknown) => boolean) {
  return z.unknown().check((ctx) => {
    const list = ctx.value;
    if (!Array.isArray(list)) {
      ctx.issues.push({ code: 'invalid_type', expected: 'array', input: list });
      return;
    }
    let found = 0;
    for (let index = 0; index < list.length && found < MAX_LIST_PROBLEMS; index += 1) {
      const value: unknown = list[index];
      if (quick?.(value) === true) continue;
      const parsed = item.safeParse(value);
      if (parsed.success) continue;
      // Each keeps its own code and message; a union of issue kinds spread into one object no longer names its kind.
      for (const issue of parsed.error.issues) ctx.issues.push({ ...issue, input: value, path: [index, ...issue.path] } as z.core.$ZodRawIssue);
      found += parsed.error.issues.length;
    }
  });
}

const approvalSnapshot = z.object({
  id: z.string(),
  approver: z.string(),
  capCents: z.number(),
  expiresAt: z.number(),
  maxUses: z.number(),
  scope: z.string(),
  revoked: z.boolean(),
  revokedAt: z.number().nullable(),
  reservedCents: z.number().nullable(),
  uses: z.number().nullable(),
});
const change = z.object({ field: z.string(), was: json, now: json });
const checks = z.object({ approvalLive: z.boolean(), approval: approvalSnapshot.nullable(), approvalProblems: listOf(z.string()), violations: listOf(z.string()), changes: listOf(change) });

const envelope = {
  // A version past these is a newer interlock's entry, and the problem says so rather than "Invalid input".
  v: z.union([z.literal(1), z.literal(2), z.literal(3)], {
    error: (issue) => (typeof issue.input === 'number' && Number.isInteger(issue.input) && issue.input > 3 ? `entry version ${issue.input} is newer than this verifier knows (1 to 3): verify it with the interlock that wrote it, or a later one` : 'entry version is not 1, 2 or 3'),
  }),
  effectId: z.string(),
  at: z.number(),
  prev: z.string().nullable(),
  kid: z.string().optional(),
  hash: z.string(),
  sig: z.string().nullable(),
  covers: z.number().int().min(0).optional(),
};

const entry = z.discriminatedUnion('kind', [
  z.object({ ...envelope, kind: z.literal('PROPOSED'), agent: z.string(), approval: z.string().nullable(), premises: jsonObject, effect: jsonObject, request: json, decision: z.object({ model: z.string(), text: z.string() }).nullable() }),
  z.object({ ...envelope, kind: z.literal('AUTHORIZED'), approval: approvalSnapshot }),
  z.object({ ...envelope, kind: z.literal('DISPATCHED'), effect: jsonObject.optional(), subject: z.string().optional(), approval: z.string(), premises: jsonObject, checks, owner: z.string(), epoch: z.number(), sendDeadline: z.number() }),
  z.object({ ...envelope, kind: z.literal('COMMITTED'), via: z.enum(['send', 'retry-idempotent', 'recovery-query', 'recovery-reapply', 'failed-but-landed', 'late-result']), result: json, found: z.string().nullable(), rechecked: checks.nullable(), epoch: z.number() }),
  z.object({ ...envelope, kind: z.literal('REFUSED'), code: z.string(), reason: z.string(), checks: checks.nullable(), rechecked: checks.nullable(), changes: listOf(change), resolves: z.boolean(), proposal: json.optional() }),
  z.object({ ...envelope, kind: z.literal('AMBIGUOUS'), reason: z.string(), rechecked: checks.nullable(), epoch: z.number() }),
  z.object({ ...envelope, kind: z.literal('LATE_RESULT'), owner: z.string(), epoch: z.number(), outcome: z.enum(['landed', 'rejected', 'unknown']), result: json, error: z.string().nullable() }),
  z.object({
    ...envelope,
    kind: z.literal('OBSERVED'),
    source: z.enum(['webhook', 'reread']),
    eventId: z.string().nullable(),
    eventType: z.string(),
    objectType: z.enum(['refund', 'dispute', 'charge', 'customer_balance_transaction', 'credit_note']),
    objectId: z.string(),
    status: z.string().nullable(),
    failureReason: z.string().nullable(),
    amount: z.number().nullable(),
    charge: z.string().nullable(),
    disputeStatus: z.string().nullable(),
    disputeReason: z.string().nullable(),
    created: z.number().nullable(),
    incident: z.string().nullable().optional(),
    currency: z.string().nullable().optional(),
    customerCurrency: z.string().nullable().optional(),
    chargeAmount: z.number().optional(),
    chargeRefunded: z.number().optional(),
  }),
  z.object({
    ...envelope,
    kind: z.literal('RESOLVED'),
    item: z.string(),
    action: z.enum(['reapprove', 'resolve', 'dismiss']),
    by: z.object({ name: z.string(), role: z.string() }),
    note: z.string(),
    resolution: z.enum(['landed', 'did_not_land']).nullable(),
    reapproval: z.object({ approval: z.string(), requestId: z.string(), effectId: z.string() }).nullable(),
  }),
]);

// The head and the bundle take no fields beyond these: a field the signature does not cover would read as part of a
// signed receipt while nobody signed it.
const head = z.strictObject({ format: z.enum(HEAD_FORMATS), effectId: z.string(), count: z.number(), lastHash: z.string().nullable(), signedAt: z.number(), kid: z.string(), sig: z.string() });

// Each entry is checked by hand first (isEntry, below), as quickShape checks them: the schema reads only those that fail.
export const receiptSchema = z.strictObject({ format: z.enum(RECEIPT_FORMATS), effectId: z.string(), entries: listOf(entry, (value) => isEntry(value)), head });

// The same shape, checked by hand: verify() is measured against raw signature checks, and the schema above costs
// as much as the rest of verify() together. A receipt that passes here is used as it is (its entries' extra
// fields, if any, already break their hashes); one that does not goes through the schema for readable problems.
type Loose = Record<string, unknown>;
const isObject = (v: unknown): v is Loose => typeof v === 'object' && v !== null && !Array.isArray(v);
const isString = (v: unknown): v is string => typeof v === 'string';
const isNumber = (v: unknown): v is number => typeof v === 'number';
const nullable = (test: (v: unknown) => boolean) => (v: unknown) => v === null || test(v);
// Each test is made once: a closure made per call would be garbage per entry.
const isStringOrNull = nullable(isString);
const isNumberOrNull = nullable(isNumber);
const isStrings = (v: unknown) => Array.isArray(v) && v.every(isString);
const isSnapshot = (v: unknown) =>
  isObject(v) && isString(v.id) && isString(v.approver) && isNumber(v.capCents) && isNumber(v.expiresAt) && isNumber(v.maxUses) && isString(v.scope) && typeof v.revoked === 'boolean' &&
  isNumberOrNull(v.revokedAt) && isNumberOrNull(v.reservedCents) && isNumberOrNull(v.uses);
const isSnapshotOrNull = nullable(isSnapshot);
const isChange = (v: unknown) => isObject(v) && isString(v.field) && 'was' in v && 'now' in v;
const isChecks = (v: unknown) =>
  isObject(v) && typeof v.approvalLive === 'boolean' && isSnapshotOrNull(v.approval) && isStrings(v.approvalProblems) && isStrings(v.violations) && Array.isArray(v.changes) && v.changes.every(isChange);
const oneOf = (values: readonly string[]) => (v: unknown) => isString(v) && values.includes(v);
const isChecksOrNull = nullable(isChecks);
const isVia = oneOf(['send', 'retry-idempotent', 'recovery-query', 'recovery-reapply', 'failed-but-landed', 'late-result']);
const isLateOutcome = oneOf(['landed', 'rejected', 'unknown']);
const isSource = oneOf(['webhook', 'reread']);
const isObjectType = oneOf(['refund', 'dispute', 'charge', 'customer_balance_transaction', 'credit_note']);
const isAction = oneOf(['reapprove', 'resolve', 'dismiss']);
const isResolutionOrNull = nullable(oneOf(['landed', 'did_not_land']));
const isDecisionOrNull = nullable((d) => isObject(d) && isString(d.model) && isString(d.text));
const isReapprovalOrNull = nullable((r) => isObject(r) && isString(r.approval) && isString(r.requestId) && isString(r.effectId));
const KIND_FIELDS: Record<string, (e: Loose) => boolean> = {
  PROPOSED: (e) => isString(e.agent) && isStringOrNull(e.approval) && isObject(e.premises) && isObject(e.effect) && 'request' in e && isDecisionOrNull(e.decision),
  AUTHORIZED: (e) => isSnapshot(e.approval),
  DISPATCHED: (e) => (e.effect === undefined || isObject(e.effect)) && (e.subject === undefined || isString(e.subject)) && isString(e.approval) && isObject(e.premises) && isChecks(e.checks) && isString(e.owner) && isNumber(e.epoch) && isNumber(e.sendDeadline),
  COMMITTED: (e) => isVia(e.via) && 'result' in e && isStringOrNull(e.found) && isChecksOrNull(e.rechecked) && isNumber(e.epoch),
  REFUSED: (e) => isString(e.code) && isString(e.reason) && isChecksOrNull(e.checks) && isChecksOrNull(e.rechecked) && Array.isArray(e.changes) && e.changes.every(isChange) && typeof e.resolves === 'boolean',
  AMBIGUOUS: (e) => isString(e.reason) && isChecksOrNull(e.rechecked) && isNumber(e.epoch),
  LATE_RESULT: (e) => isString(e.owner) && isNumber(e.epoch) && isLateOutcome(e.outcome) && 'result' in e && isStringOrNull(e.error),
  OBSERVED: (e) =>
    isSource(e.source) && isStringOrNull(e.eventId) && isString(e.eventType) && isObjectType(e.objectType) && isString(e.objectId) && isStringOrNull(e.status) &&
    isStringOrNull(e.failureReason) && isNumberOrNull(e.amount) && isStringOrNull(e.charge) && isStringOrNull(e.disputeStatus) && isStringOrNull(e.disputeReason) && isNumberOrNull(e.created) &&
    (e.incident === undefined || isStringOrNull(e.incident)) && (e.currency === undefined || isStringOrNull(e.currency)) && (e.customerCurrency === undefined || isStringOrNull(e.customerCurrency)) &&
    (e.chargeAmount === undefined || isNumber(e.chargeAmount)) && (e.chargeRefunded === undefined || isNumber(e.chargeRefunded)),
  RESOLVED: (e) =>
    isString(e.item) && isAction(e.action) && isObject(e.by) && isString(e.by.name) && isString(e.by.role) && isString(e.note) && isResolutionOrNull(e.resolution) && isReapprovalOrNull(e.reapproval),
};
const isEntry = (v: unknown) =>
  isObject(v) && (v.v === 1 || v.v === 2 || v.v === 3) && isString(v.effectId) && isNumber(v.at) && isStringOrNull(v.prev) && (v.kid === undefined || isString(v.kid)) && isString(v.hash) &&
  isStringOrNull(v.sig) && (v.covers === undefined || (Number.isSafeInteger(v.covers) && (v.covers as number) >= 0)) && isString(v.kind) && Object.hasOwn(KIND_FIELDS, v.kind) && (KIND_FIELDS[v.kind] as (e: Loose) => boolean)(v);
const HEAD_KEYS = ['format', 'effectId', 'count', 'lastHash', 'signedAt', 'kid', 'sig'];
const isHead = (v: unknown) =>
  isObject(v) && Object.keys(v).every((key) => HEAD_KEYS.includes(key)) && (HEAD_FORMATS as readonly unknown[]).includes(v.format) && isString(v.effectId) && isNumber(v.count) && isStringOrNull(v.lastHash) && isNumber(v.signedAt) && isString(v.kid) && isString(v.sig);
export function quickShape(input: unknown): Receipt | null {
  if (!isObject(input) || !Object.keys(input).every((key) => key === 'format' || key === 'effectId' || key === 'entries' || key === 'head')) return null;
  if (!(RECEIPT_FORMATS as readonly unknown[]).includes(input.format) || !isString(input.effectId) || !Array.isArray(input.entries) || !isHead(input.head)) return null;
  return input.entries.every(isEntry) ? (input as unknown as Receipt) : null;
}

export function parseReceipt(input: unknown): { ok: true; receipt: Receipt } | { ok: false; problems: string[] } {
  try {
    const quick = quickShape(input);
    if (quick !== null) return { ok: true, receipt: quick };
  } catch {
    // A getter that throws, a proxy: the schema below reports it.
  }
  let parsed: ReturnType<typeof receiptSchema.safeParse>;
  try {
    parsed = receiptSchema.safeParse(input);
  } catch (error) {
    // safeParse reports bad shapes but throws on nesting deeper than the stack; untrusted input must not crash verify().
    return { ok: false, problems: [`receipt cannot be read: ${error instanceof Error ? error.message : String(error)}`] };
  }
  if (parsed.success) return { ok: true, receipt: parsed.data as unknown as Receipt };
  return { ok: false, problems: parsed.error.issues.slice(0, 10).map((issue) => `receipt is malformed at ${issue.path.join('.') || '(root)'}: ${issueMessage(issue)}`) };
}

/** How many extra keys a problem names: a hostile receipt may hold millions, and the problem is one line. */
const KEYS_NAMED = 5;

/** An issue's message, with zod's list of every unrecognized key cut to its first few and a count. */
function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code !== 'unrecognized_keys' || issue.keys.length <= KEYS_NAMED) return issue.message;
  const named = issue.keys.slice(0, KEYS_NAMED).map((key) => JSON.stringify(key.slice(0, 60))).join(', ');
  return `Unrecognized keys: ${named} and ${issue.keys.length - KEYS_NAMED} more`;
}
