// Quoting what the outside world said. Entries record facts a target read, objects it returned and errors it
// raised; none of that is under the caller's control, so it may be nested without end, huge, or hold strings with
// no canonical form. A refusal or a commit must never fail to be written because of what it quotes (issue 6, item
// 9), so every such value passes through quote(): the result is always plain, canonical, bounded JSON.
//
// The bounds are a budget spent while copying, not a measure taken afterwards: an answer that reuses one object
// many times (100 references to one list, four levels deep) is small in memory but 100^4 values to copy. The copy
// counts the characters of the JSON text it has produced so far, in the order JSON.stringify writes them, and stops
// at the first one past `totalChars`. Every value read costs at least one character, so the number of values read
// (and of getters and proxy traps run) is bounded by the same budget, whatever the shape of the input.
import { hasLoneSurrogate, PLAIN_STRING, wellFormed, type Json, type JsonObject } from './json.js';

export type QuoteLimits = { depth: number; stringChars: number; items: number; totalChars: number };

export const QUOTE_LIMITS: QuoteLimits = { depth: 8, stringChars: 2_000, items: 100, totalChars: 16_000 };

const CUT = '…';

function quoteString(text: string, limits: QuoteLimits): string {
  // Cut first, then clean: a huge string is never scanned, and a pair split by the cut leaves no lone half behind.
  // A lone surrogate becomes U+FFFD, as a UTF-8 encoder would write it; the rest of the text is kept.
  const cut = text.length > limits.stringChars;
  const kept = cut ? text.slice(0, limits.stringChars) : text;
  const clean = wellFormed(kept);
  return cut ? `${clean}${CUT}` : clean;
}

/**
 * One field of a quoted object: the source key whose value it holds, or the note on the fields left out; `cost` is
 * the length of its name's JSON text.
 */
type Field = { name: string; cost: number; key: string } | { name: string; cost: number; note: string };

type Copy = {
  limits: QuoteLimits;
  /** Characters of JSON text produced so far; past `limits.totalChars` the copy stops. */
  spent: number;
  /** The objects on the path being copied, for cycles. */
  seen: Set<object>;
  /** Each object's fields, listed once however often the object is reached. */
  fields: Map<object, Field[]>;
};

/** Counts `chars` more characters of output; false once the budget is spent. */
function spend(copy: Copy, chars: number): boolean {
  copy.spent += chars;
  return copy.spent <= copy.limits.totalChars;
}

/** The length of a scalar's JSON text, without writing it for the common cases (this runs for every value quoted). */
function jsonLength(value: Json): number {
  switch (typeof value) {
    case 'string':
      return PLAIN_STRING.test(value) ? value.length + 2 : JSON.stringify(value).length;
    case 'number':
      return String(value).length;
    case 'boolean':
      return value ? 4 : 5;
    default:
      return value === null ? 4 : JSON.stringify(value).length;
  }
}

function scalar(copy: Copy, value: Json): Json {
  spend(copy, jsonLength(value));
  return value;
}

/**
 * The fields of a quoted object, in the order JSON.stringify writes them: the first `items` keys under their quoted
 * names, a name that two keys share holding the later key's value, then the note on the rest.
 */
function fieldsOf(value: object, copy: Copy): Field[] {
  const known = copy.fields.get(value);
  if (known !== undefined) return known;
  const { limits } = copy;
  const keys = Object.keys(value);
  // Most objects quote their keys as they are: then the fields are the keys, in the order the object lists them.
  if (keys.length <= limits.items && keys.every((key) => key !== '__proto__' && key.length <= limits.stringChars && !hasLoneSurrogate(key))) {
    const plain = keys.map((key): Field => ({ name: key, cost: jsonLength(key), key }));
    copy.fields.set(value, plain);
    return plain;
  }
  const byName = new Map<string, string>();
  for (const key of keys.slice(0, limits.items)) {
    // "__proto__" cannot be copied as data; its value is kept under a name that can.
    byName.set(key === '__proto__' ? '(__proto__)' : quoteString(key, limits), key);
  }
  const note = keys.length > limits.items ? `${keys.length - limits.items} more fields` : null;
  // An object lists integer-like names first, whatever order they were added in; JSON.stringify follows it.
  const order: Record<string, true> = {};
  for (const name of byName.keys()) order[name] = true;
  if (note !== null) order[CUT] = true;
  const fields = Object.keys(order).map((name): Field => {
    const key = byName.get(name);
    const cost = jsonLength(name);
    return note !== null && name === CUT ? { name, cost, note } : { name, cost, key: key ?? name };
  });
  copy.fields.set(value, fields);
  return fields;
}

function quoteArray(value: readonly unknown[], depth: number, copy: Copy): Json[] {
  const { limits } = copy;
  const items: Json[] = [];
  if (!spend(copy, 1)) return items;
  const length = value.length;
  const shown = Math.min(length, limits.items);
  for (let index = 0; index < shown; index += 1) {
    // A placeholder keeps a counted comma in the text; the preview never reaches past it.
    if (index > 0 && !spend(copy, 1)) return [...items, null];
    // An index read, not map(): a hole is read as undefined and written as null, never left as a hole.
    items.push(quoteValue(value[index], depth + 1, copy));
    if (copy.spent > limits.totalChars) return items;
  }
  if (length > limits.items) {
    if (shown > 0 && !spend(copy, 1)) return [...items, null];
    items.push(scalar(copy, `${CUT} ${length - limits.items} more`));
    if (copy.spent > limits.totalChars) return items;
  }
  spend(copy, 1);
  return items;
}

function quoteFields(value: object, depth: number, copy: Copy): JsonObject {
  const out: JsonObject = {};
  if (!spend(copy, 1)) return out;
  let first = true;
  for (const field of fieldsOf(value, copy)) {
    if (!spend(copy, (first ? 0 : 1) + field.cost + 1)) {
      out[field.name] = null;
      return out;
    }
    first = false;
    out[field.name] = 'note' in field ? scalar(copy, field.note) : quoteValue((value as Record<string, unknown>)[field.key], depth + 1, copy);
    if (copy.spent > copy.limits.totalChars) return out;
  }
  spend(copy, 1);
  return out;
}

function quoteValue(value: unknown, depth: number, copy: Copy): Json {
  const { limits } = copy;
  switch (typeof value) {
    case 'string':
      return scalar(copy, quoteString(value, limits));
    case 'number':
      return scalar(copy, Number.isFinite(value) ? value : null);
    case 'boolean':
      return scalar(copy, value);
    case 'bigint':
      return scalar(copy, value.toString());
    case 'undefined':
    case 'function':
    case 'symbol':
      return scalar(copy, null);
    case 'object': {
      if (value === null) return scalar(copy, null);
      if (copy.seen.has(value)) return scalar(copy, '[circular]');
      if (depth >= limits.depth) return scalar(copy, '[nested too deep]');
      if (value instanceof Date) return scalar(copy, Number.isFinite(value.getTime()) ? value.toISOString() : null);
      if (value instanceof Uint8Array) return scalar(copy, `[${value.byteLength} bytes]`);
      copy.seen.add(value);
      try {
        return Array.isArray(value) ? quoteArray(value, depth, copy) : quoteFields(value, depth, copy);
      } finally {
        copy.seen.delete(value);
      }
    }
    default:
      return scalar(copy, null);
  }
}

/** What a thrown value says, as text; a value that cannot even say that is named as such. */
function messageOf(error: unknown): string {
  try {
    const message: unknown = error instanceof Error ? error.message : error;
    return typeof message === 'string' ? message : String(message);
  } catch {
    return 'an error that cannot be read';
  }
}

/**
 * Bounded, canonical JSON for anything a target handed back; never throws. The work done is bounded by
 * `limits.totalChars` (plus each distinct object's own key list), not by the size or shape of `value`.
 */
export function quote(value: unknown, limits: QuoteLimits = QUOTE_LIMITS): Json {
  const copy: Copy = { limits, spent: 0, seen: new Set(), fields: new Map() };
  let quoted: Json;
  try {
    quoted = quoteValue(value, 0, copy);
  } catch (error) {
    // A getter that throws, a revoked proxy: the value cannot be read, which is itself the fact to record.
    return `[unreadable: ${quoteString(messageOf(error), limits)}]`;
  }
  if (copy.spent <= limits.totalChars) return quoted;
  // The copy stopped past the budget, with everything before that point in place: its text starts as the whole
  // value's would, further than the preview reaches.
  return { truncated: true, preview: quoteString(JSON.stringify(quoted), { ...limits, stringChars: Math.min(limits.stringChars, limits.totalChars) }) };
}

/** quote() for a value that must stay an object (a landed result, a set of facts). */
export function quoteObject(value: unknown, limits: QuoteLimits = QUOTE_LIMITS): JsonObject {
  const quoted = quote(value, limits);
  if (typeof quoted === 'object' && quoted !== null && !Array.isArray(quoted)) return quoted;
  return { value: quoted };
}

/** A short, safe message for an error, for entries and answers; never throws. */
export function quoteError(error: unknown): string {
  let text: string;
  try {
    text = error instanceof Error || typeof error === 'string' ? messageOf(error) : JSON.stringify(quote(error));
  } catch {
    text = 'an unreadable error';
  }
  return quoteString(text, { ...QUOTE_LIMITS, stringChars: 500 });
}
