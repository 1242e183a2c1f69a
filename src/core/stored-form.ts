// The form journal entries take in Redis (issue 8 §1: Redis memory per committed effect). An entry's canonical JSON
// repeats the same field names and the same common values in every effect: `"approvalProblems":`, `"sig":null`,
// `"kind":"DISPATCHED"`, the empty checks of a dispatch. Redis keeps each of these as a two-byte code instead: a
// control byte from 0x01 to 0x08 (the page) and one printable character from `!` to `~` (the place on the page),
// so code i is page 1 + i / 94, place i % 94 of TOKENS.
//
// Why the codes can never be confused with content: the stored text is canonical JSON, which writes every control
// character inside a string as an escape (`\u0001`), so a raw control byte never occurs in it. Decoding replaces
// each code by its token and nothing else, so whatever the encoder chose to code, the text comes back byte for byte;
// a token that also occurs inside a string value (say, a refund reason that reads `"sig":null`) costs nothing but
// the chance to shorten it. A chain whose codes were edited in Redis decodes to other text, fails its hashes and
// signatures, and reads as tampered, like any other edit.
//
// TOKENS is append-only: a chain already in Redis names tokens by position, so reordering or changing one would
// make every chain written before read as tampered. tests/core/stored-form.test.ts pins the list.

import { quoteKey } from './json.js';

const FIRST_PAGE = 0x01;
const LAST_PAGE = 0x08;
const FIRST_PLACE = 0x21;
const PLACES = 0x7e - FIRST_PLACE + 1;

/** A top-level field and a value it usually has, coded as one token (`"<field>":<value json>`). */
const COMMON_FIELDS: readonly (readonly [string, string])[] = [
  ['checks', '{"approval":null,"approvalLive":true,"approvalProblems":[],"changes":[],"violations":[]}'],
  ['premises', '{"chargebacks":[],"refunded_by_others":0}'],
  ['rechecked', 'null'],
  ['decision', 'null'],
  ['request', 'null'],
  ['sig', 'null'],
  ['v', '2'],
  ['covers', '2'],
  ['epoch', '1'],
  ['via', '"send"'],
  ['found', 'null'],
  ['kind', '"PROPOSED"'],
  ['kind', '"AUTHORIZED"'],
  ['kind', '"DISPATCHED"'],
  ['kind', '"COMMITTED"'],
  ['kind', '"REFUSED"'],
  ['kind', '"AMBIGUOUS"'],
  ['kind', '"LATE_RESULT"'],
  ['kind', '"OBSERVED"'],
  ['kind', '"RESOLVED"'],
];

/** Field names that entries, approval snapshots, checks, effects and Stripe results use, coded as `"<name>":`. */
const FIELD_NAMES: readonly string[] = [
  'agent', 'approval', 'at', 'effect', 'premises', 'requestId', 'approver', 'capCents', 'expiresAt', 'id', 'maxUses',
  'scope', 'epoch', 'owner', 'sendDeadline', 'subject', 'found', 'result', 'amount', 'kind', 'paymentIntent', 'reason',
  'customer', 'charge', 'status', 'object', 'source', 'eventId', 'eventType', 'objectType', 'objectId', 'failureReason',
  'disputeStatus', 'disputeReason', 'created', 'code', 'resolves', 'proposal', 'outcome', 'error', 'item', 'action',
  'by', 'note', 'resolution', 'reapproval', 'name', 'role', 'was', 'now', 'field', 'sig', 'kid', 'covers', 'v', 'via',
  'rechecked', 'checks', 'decision', 'request', 'model', 'text', 'revoked', 'revokedAt', 'reservedCents', 'uses',
  'changes', 'violations', 'approvalLive', 'approvalProblems', 'chargebacks', 'refunded_by_others',
];

/** A name inside a nested object (a snapshot, an effect, a Stripe result) with a value it usually has. */
const COMMON_NESTED: readonly string[] = [
  '"revoked":false', '"revokedAt":null', '"reservedCents":null', '"uses":null', '"approval":null', '"kind":"refund"',
  '"kind":"credit"', '"reason":"requested_by_customer"', '"object":"refund"', '"status":"succeeded"', '"status":"pending"',
  '"status":"failed"', '"currency":"usd"',
];

/** The start of every key id this project makes (signing.ts): `"kid":"ed25519:<16 hex>"`. */
const KID_PREFIX = '"kid":"ed25519:';

/**
 * `"at":` followed by the `at` of the entry before: the entries of one batch are written at one time. The only code
 * that is not plain text: decoding it needs the entry before (fromStored reads a chain in order).
 */
export const SAME_AT = '"at":<the entry before>';

/** Every token, in code order. */
export const TOKENS: readonly string[] = [
  ...COMMON_FIELDS.map(([field, value]) => `"${field}":${value}`),
  ...FIELD_NAMES.map((name) => `"${name}":`),
  KID_PREFIX,
  ...COMMON_NESTED,
  SAME_AT,
];
if (TOKENS.length > (LAST_PAGE - FIRST_PAGE + 1) * PLACES) throw new Error('stored-form: more tokens than codes');

const codeAt = (index: number) => String.fromCharCode(FIRST_PAGE + Math.floor(index / PLACES), FIRST_PLACE + (index % PLACES));

/** The two characters that stand for `token` in the stored form (tests; the encoder keeps its own maps). */
export function codeOf(token: string): string {
  const index = TOKENS.indexOf(token);
  if (index === -1) throw new Error(`stored-form: no code for ${token}`);
  return codeAt(index);
}
const commonCodes = new Map<string, Map<string, string>>();
COMMON_FIELDS.forEach(([field, value], index) => {
  const values = commonCodes.get(field) ?? new Map<string, string>();
  values.set(value, codeAt(index));
  commonCodes.set(field, values);
});
const nameCodes = new Map(FIELD_NAMES.map((name, index) => [name, codeAt(COMMON_FIELDS.length + index)]));
const tokenCodes = new Map(TOKENS.map((token, index) => [token, codeAt(index)]));
const kidCode = codeAt(TOKENS.indexOf(KID_PREFIX));
const sameAtIndex = TOKENS.indexOf(SAME_AT);
const sameAtCode = codeAt(sameAtIndex);

// A plain name, and the literal value after it when it is a short one: `"status":"succeeded"` is one token.
const NESTED_NAME = /"([A-Za-z_]{1,24})":(null|false|true|"[a-z_]{1,24}")?/g;
function codeNested(match: string, name: string, value: string | undefined): string {
  if (value !== undefined) {
    const pair = tokenCodes.get(match);
    if (pair !== undefined) return pair;
  }
  const code = nameCodes.get(name);
  if (code === undefined) return match;
  return value === undefined ? code : code + value;
}

/**
 * Nested objects repeat from effect to effect (one approval's snapshot, one payment's premises), so their coded
 * text is kept for the last few hundred seen: most entries then cost a lookup, not a scan.
 */
const nestedCache = new Map<string, string>();
const NESTED_CACHE_SIZE = 512;

function encodeNested(json: string): string {
  const cached = nestedCache.get(json);
  if (cached !== undefined) return cached;
  const coded = json.replace(NESTED_NAME, codeNested);
  if (nestedCache.size >= NESTED_CACHE_SIZE) nestedCache.clear();
  nestedCache.set(json, coded);
  return coded;
}

/**
 * `"<key>":<json>` of one top-level field, coded. `json` is the field's canonical value; `previousAt` is the `at` of
 * the entry before in the chain, when the writer knows it.
 */
export function encodeStoredField(key: string, json: string, previousAt?: number): string {
  if (key === 'at' && previousAt !== undefined && json === String(previousAt)) return sameAtCode;
  const common = commonCodes.get(key)?.get(json);
  if (common !== undefined) return common;
  if (key === 'kid' && json.startsWith('"ed25519:')) return kidCode + json.slice(9);
  const first = json.charCodeAt(0);
  return (nameCodes.get(key) ?? `${quoteKey(key)}:`) + (first === 123 || first === 91 ? encodeNested(json) : json);
}

/**
 * The canonical JSON text back from its stored form (a line without codes, as older versions wrote, is unchanged).
 * `previousAt` is the `at` of the entry before (null for the first entry of a chain).
 */
export function decodeStored(line: string, previousAt: number | null = null): string {
  let text = '';
  let copied = 0;
  for (let index = 0; index < line.length - 1; index += 1) {
    const page = line.charCodeAt(index);
    if (page < FIRST_PAGE || page > LAST_PAGE) continue;
    const place = line.charCodeAt(index + 1) - FIRST_PLACE;
    const code = (page - FIRST_PAGE) * PLACES + place;
    const token = place < 0 || place >= PLACES ? undefined : code !== sameAtIndex ? TOKENS[code] : previousAt === null ? undefined : `"at":${previousAt}`;
    // An unknown code is an edit made in Redis: its bytes stay, so the line fails to parse or to hash.
    if (token === undefined) continue;
    text += line.slice(copied, index) + token;
    index += 1;
    copied = index + 1;
  }
  return copied === 0 ? line : text + line.slice(copied);
}
