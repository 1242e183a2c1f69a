// JSON values and their RFC 8785 canonical form. Hashes, effect ids and signatures all depend on the exact
// bytes, so anything without one canonical form is refused here instead of being silently coerced.
//
// RFC 8785 serialises numbers and strings exactly as ECMAScript's JSON.stringify does (§3.2.2.2, §3.2.2.3) and
// sorts object keys by UTF-16 code units (§3.2.3), which is what Array.prototype.sort does by default. So the
// serialiser below only has to order keys and refuse what has no canonical form; it is hand-written because
// verify() rehashes every entry and must stay a small fraction of the signature checks it sits beside.
import { hash } from 'node:crypto';
import { InterlockError } from './errors.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** Deeper values are refused: nothing the gate records needs them, and recursion on hostile input must stay bounded. */
export const MAX_JSON_DEPTH = 64;

export class NonCanonicalValueError extends InterlockError {
  constructor(readonly path: string, what: string) {
    super('non_canonical_value', `Value at ${path} has no canonical JSON form: ${what}. Use plain objects, arrays, strings, finite numbers, booleans and null.`, { fields: [{ path, message: what }] });
    this.name = 'NonCanonicalValueError';
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') {
    const ctor: unknown = (value as { constructor?: unknown }).constructor;
    return `an instance of ${typeof ctor === 'function' && ctor.name !== '' ? ctor.name : 'an unknown class'}`;
  }
  return `a ${typeof value}`;
}

// RFC 8785 §3.2.2.2: a lone surrogate has no UTF-8 form, so it cannot be hashed the same way twice. A string with
// no surrogate code unit at all (nearly every string) is told apart by the cheap test first.
const ANY_SURROGATE = /[\uD800-\uDFFF]/;
const LONE_SURROGATE = /\p{Surrogate}/u;

export function hasLoneSurrogate(text: string): boolean {
  return ANY_SURROGATE.test(text) && LONE_SURROGATE.test(text);
}

/** `text` with each lone surrogate as U+FFFD, as a UTF-8 encoder writes it, so it has a canonical form; the rest kept. */
export function wellFormed(text: string): string {
  return hasLoneSurrogate(text) ? text.replace(/\p{Surrogate}/gu, '\ufffd') : text;
}

type Visit = { path: string; depth: number; ancestors: object[] };

function check(value: unknown, at: Visit): Json {
  switch (typeof value) {
    case 'string':
      if (hasLoneSurrogate(value)) throw new NonCanonicalValueError(at.path, 'a string with a lone UTF-16 surrogate');
      return value;
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new NonCanonicalValueError(at.path, String(value));
      return value;
    case 'object': {
      if (value === null) return null;
      if (at.ancestors.includes(value)) throw new NonCanonicalValueError(at.path, 'a circular reference');
      if (at.depth >= MAX_JSON_DEPTH) throw new NonCanonicalValueError(at.path, `nesting deeper than ${MAX_JSON_DEPTH} levels`);
      at.ancestors.push(value);
      try {
        if (Array.isArray(value)) {
          // An index loop, not map(): map skips the holes of a sparse array, which would serialise as "[1,,2]".
          const items: Json[] = [];
          for (let index = 0; index < value.length; index += 1) {
            const item: unknown = value[index];
            const path = `${at.path}[${index}]`;
            if (item === undefined) throw new NonCanonicalValueError(path, 'undefined inside an array');
            items.push(check(item, { path, depth: at.depth + 1, ancestors: at.ancestors }));
          }
          return items;
        }
        const proto: unknown = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) throw new NonCanonicalValueError(at.path, describe(value));
        const out: JsonObject = {};
        for (const key of Object.keys(value)) {
          const item: unknown = (value as Record<string, unknown>)[key];
          if (item === undefined) continue;
          const path = `${at.path}.${key}`;
          // Assigning "__proto__" would set the copy's prototype: the field would vanish from the hashed bytes.
          if (key === '__proto__') throw new NonCanonicalValueError(path, 'a "__proto__" key, which a JavaScript object cannot copy as data');
          if (hasLoneSurrogate(key)) throw new NonCanonicalValueError(path, 'a key with a lone UTF-16 surrogate');
          out[key] = check(item, { path, depth: at.depth + 1, ancestors: at.ancestors });
        }
        return out;
      } finally {
        at.ancestors.pop();
      }
    }
    default:
      throw new NonCanonicalValueError(at.path, describe(value));
  }
}

/** Checks that `value` is plain JSON and returns a plain copy. Undefined object properties are dropped, as JSON does. */
export function assertJson(value: unknown, path = '$'): Json {
  return check(value, { path, depth: 0, ancestors: [] });
}

/** A path, built only when a value is refused: `$.a[2].b`. */
function pathOf(root: string, trail: readonly (string | number)[]): string {
  let path = root;
  for (const part of trail) path += typeof part === 'number' ? `[${part}]` : `.${part}`;
  return path;
}

// The depth from which canonicalJsonWithout's strict road searches the ancestors for a cycle (writeStrict).
const CYCLE_CHECK_DEPTH = 8;

/** A key as JSON, quotes included: most keys are plain identifiers, which need no escaping. */
const PLAIN_KEY = /^[A-Za-z0-9_$]*$/;
export function quoteKey(key: string): string {
  return PLAIN_KEY.test(key) ? `"${key}"` : JSON.stringify(key);
}

// Plain keys already quoted: entries use a few dozen field names, over and over. A key found here is plain, so it
// needs no surrogate check either. Bounded, since keys inside effects and results come from outside.
const QUOTED = new Map<string, string>();
const QUOTED_MAX = 2_048;

/** quoteKey for a key checked to have a canonical form, or null when it has none ("__proto__", a lone surrogate). */
function quotedKey(key: string): string | null {
  const known = QUOTED.get(key);
  if (known !== undefined) return known;
  if (key === '__proto__' || hasLoneSurrogate(key)) return null;
  const quoted = quoteKey(key);
  if (QUOTED.size < QUOTED_MAX && PLAIN_KEY.test(key)) QUOTED.set(key, quoted);
  return quoted;
}

// Sorted key lists already made, by an object's own key order: entries and their parts come in a few dozen shapes,
// and sorting a fresh copy of the same keys for every object was a tenth of what a gated effect allocated. An object
// whose keys are a known list's, in the same order, takes its sorted copy (never changed by its users), with each
// key written as JSON once and for all (`"key":`, null for a key with no canonical form), so the writer neither
// looks a key up nor quotes it again. Shapes are kept by their first key, a few each (every entry starts with `v`);
// bounded, since objects come from outside too.
type Shape = { keys: readonly string[]; sorted: readonly string[]; heads: readonly (string | null)[] };
const SHAPES = new Map<string, Shape[]>();
const SHAPES_MAX = 256;
const SHAPES_PER_FIRST_KEY = 16;
let shapes = 0;

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index += 1) if (a[index] !== b[index]) return false;
  return true;
}

/** `"key":` for a key with a canonical form; null for one without ("__proto__", a lone surrogate). */
function headOf(key: string): string | null {
  const quoted = quotedKey(key);
  return quoted === null ? null : `${quoted}:`;
}

function shapeOf(value: object): Pick<Shape, 'sorted' | 'heads'> {
  const keys = Object.keys(value);
  if (keys.length === 0) return { sorted: keys, heads: [] };
  const first = keys[0] as string;
  const known = SHAPES.get(first);
  if (known !== undefined) for (const shape of known) if (sameKeys(shape.keys, keys)) return shape;
  const sorted = keys.length < 2 ? keys : [...keys].sort();
  const shape: Shape = { keys, sorted, heads: sorted.map(headOf) };
  if (shapes < SHAPES_MAX && (known?.length ?? 0) < SHAPES_PER_FIRST_KEY) {
    if (known === undefined) SHAPES.set(first, [shape]);
    else known.push(shape);
    shapes += 1;
  }
  return shape;
}

function sortedKeys(value: object): readonly string[] {
  return shapeOf(value).sorted;
}

/**
 * Canonical JSON in one pass that also refuses what has no canonical form, exactly as assertJson does, without
 * making a copy first, naming the path of what it refuses. Values are written by writeQuick (below), which keeps no
 * path; one it cannot write comes here to be refused with its path.
 */
function writeStrict(value: unknown, root: string, trail: (string | number)[], ancestors: object[], skip?: ReadonlySet<string>, cycleDepth = 0): string {
  switch (typeof value) {
    case 'string':
      if (hasLoneSurrogate(value)) throw new NonCanonicalValueError(pathOf(root, trail), 'a string with a lone UTF-16 surrogate');
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new NonCanonicalValueError(pathOf(root, trail), String(value));
      return JSON.stringify(value);
    case 'object': {
      if (value === null) return 'null';
      // A cycle is also caught by the depth bound; with `cycleDepth` the ancestors are searched only past that many
      // levels (rehashing parsed JSON, where no cycle can be, skips the search where it costs most).
      if (trail.length >= cycleDepth && ancestors.includes(value)) throw new NonCanonicalValueError(pathOf(root, trail), 'a circular reference');
      if (trail.length >= MAX_JSON_DEPTH) throw new NonCanonicalValueError(pathOf(root, trail), `nesting deeper than ${MAX_JSON_DEPTH} levels`);
      ancestors.push(value);
      try {
        if (Array.isArray(value)) {
          let text = '[';
          for (let index = 0; index < value.length; index += 1) {
            const item: unknown = value[index];
            trail.push(index);
            if (item === undefined) throw new NonCanonicalValueError(pathOf(root, trail), 'undefined inside an array');
            text += (index > 0 ? ',' : '') + writeStrict(item, root, trail, ancestors, undefined, cycleDepth);
            trail.pop();
          }
          return `${text}]`;
        }
        const proto: unknown = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) throw new NonCanonicalValueError(pathOf(root, trail), describe(value));
        const keys = sortedKeys(value);
        let text = '{';
        let first = true;
        for (const key of keys) {
          if (skip !== undefined && skip.has(key)) continue;
          const item: unknown = (value as Record<string, unknown>)[key];
          if (item === undefined) continue;
          trail.push(key);
          const quoted = quotedKey(key);
          if (quoted === null) {
            if (key === '__proto__') throw new NonCanonicalValueError(pathOf(root, trail), 'a "__proto__" key, which a JavaScript object cannot copy as data');
            throw new NonCanonicalValueError(pathOf(root, trail), 'a key with a lone UTF-16 surrogate');
          }
          text += `${first ? '' : ','}${quoted}:${writeStrict(item, root, trail, ancestors, undefined, cycleDepth)}`;
          trail.pop();
          first = false;
        }
        return `${text}}`;
      } finally {
        ancestors.pop();
      }
    }
    default:
      throw new NonCanonicalValueError(pathOf(root, trail), describe(value));
  }
}

/**
 * The canonical form of each field of an object, sorted by key, undefined fields left out: what an entry's hash
 * input and its stored form are both assembled from, so each field is serialised once (entries.ts).
 */
export function canonicalFields(value: Record<string, unknown>, path = '$'): [key: string, json: string][] {
  const fields: [string, string][] = [];
  for (const key of sortedKeys(value)) {
    const item = value[key];
    if (item === undefined) continue;
    if (key === '__proto__' || hasLoneSurrogate(key)) throw new NonCanonicalValueError(`${path}.${key}`, 'a key with no canonical form');
    fields.push([key, writeQuick(item, 1) ?? writeStrict(item, path, [key], [])]);
  }
  return fields;
}

/**
 * canonicalFields and joinFields at once, for an object hashed and stored field by field (entries.ts), without a pair
 * per field: `fields` holds each kept field's key and canonical value in turn (key, value, key, value, …), sorted by
 * key, and `json` is the object's canonical JSON. Refuses what canonicalFields refuses, with the same words.
 */
export function canonicalFieldList(value: Record<string, unknown>, path = '$'): { fields: string[]; json: string } {
  const { sorted, heads } = shapeOf(value);
  const fields: string[] = [];
  let json = '{';
  for (let index = 0; index < sorted.length; index += 1) {
    const key = sorted[index] as string;
    const item = value[key];
    if (item === undefined) continue;
    // A key with no canonical form ("__proto__", a lone surrogate) has no head.
    const head = heads[index] ?? null;
    if (head === null) throw new NonCanonicalValueError(`${path}.${key}`, 'a key with no canonical form');
    const written = writeQuick(item, 1) ?? writeStrict(item, path, [key], []);
    fields.push(key, written);
    json += json.length > 1 ? `,${head}${written}` : `${head}${written}`;
  }
  return { fields, json: `${json}}` };
}

/** Joins fields from canonicalFields back into an object's JSON (canonical when all fields are kept, in order). */
export function joinFields(fields: readonly (readonly [string, string])[]): string {
  let text = '{';
  for (let index = 0; index < fields.length; index += 1) {
    const field = fields[index] as readonly [string, string];
    text += `${index > 0 ? ',' : ''}${quotedKey(field[0]) ?? quoteKey(field[0])}:${field[1]}`;
  }
  return `${text}}`;
}

// A string JSON.stringify writes as it is, between quotes: no quote, backslash, control character or surrogate.
// eslint-disable-next-line no-control-regex -- the control characters are what it looks for
export const PLAIN_STRING = /^[^"\\\u0000-\u001f\uD800-\uDFFF]*$/;

/**
 * writeStrict's quick road: the same text, written without keeping the path, the ancestors or a try block for the
 * error a value with no canonical form needs; null for such a value (too deep stands for a cycle too), which then
 * takes writeStrict's road to be refused with its path.
 */
function writeQuick(value: unknown, depth: number, skip?: ReadonlySet<string>): string | null {
  switch (typeof value) {
    case 'string':
      // Most strings need no escape and hold no surrogate: quoted as they are.
      if (PLAIN_STRING.test(value)) return `"${value}"`;
      return hasLoneSurrogate(value) ? null : JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      // A finite number's JSON is its ECMAScript string (RFC 8785 §3.2.2.3), -0 included ("0").
      return Number.isFinite(value) ? `${value}` : null;
    case 'object': {
      if (value === null) return 'null';
      if (depth >= MAX_JSON_DEPTH) return null;
      if (Array.isArray(value)) {
        let text = '[';
        for (let index = 0; index < value.length; index += 1) {
          const item: unknown = value[index];
          const written = item === undefined ? null : writeQuick(item, depth + 1);
          if (written === null) return null;
          text += index > 0 ? `,${written}` : written;
        }
        return `${text}]`;
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return null;
      let text = '{';
      const { sorted, heads } = shapeOf(value);
      for (let index = 0; index < sorted.length; index += 1) {
        const key = sorted[index] as string;
        if (skip !== undefined && skip.has(key)) continue;
        const item: unknown = (value as Record<string, unknown>)[key];
        if (item === undefined) continue;
        const head = heads[index] ?? null;
        const written = head === null ? null : writeQuick(item, depth + 1);
        if (written === null) return null;
        text += text.length > 1 ? `,${head}${written}` : `${head}${written}`;
      }
      return `${text}}`;
    }
    default:
      return null;
  }
}

/** RFC 8785 canonical JSON of a plain JSON value; refuses, with the path, anything without a canonical form. */
export function canonicalJson(value: unknown, path = '$'): string {
  return writeQuick(value, 0) ?? writeStrict(value, path, [], []);
}

/** canonicalJson of an object without some of its top-level fields, with no copy made to leave them out. */
export function canonicalJsonWithout(value: Record<string, unknown>, skip: ReadonlySet<string>, path = '$'): string {
  return writeQuick(value, 0, skip) ?? writeStrict(value, path, [], [], skip, CYCLE_CHECK_DEPTH);
}

/**
 * The length of a plain JSON value's canonical form without writing it: JSON.stringify writes the same strings and
 * numbers (RFC 8785 takes both from it) and differs only in the order of keys. Only for a value known to be plain
 * JSON (assertJson's copy, or parts checked as such): on anything else the two differ.
 */
export function canonicalLength(value: Json): number {
  return JSON.stringify(value).length;
}

export function sha256Hex(text: string): string {
  // The one-shot form costs about half of createHash().update().digest() for an entry-sized text.
  return hash('sha256', text, 'hex');
}

export function isJsonObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Whether `value` nests objects or arrays more than `max` levels deep (`{}` is one level). Walked without recursion,
 * so it answers for any parsed input: JSON.parse takes nesting that JSON.stringify (a queue's job, a log line) then
 * overflows the stack on.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const pending: [unknown, number][] = [[value, 1]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [item, depth] = next;
    if (typeof item !== 'object' || item === null) continue;
    if (depth > max) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) if (typeof child === 'object' && child !== null) pending.push([child, depth + 1]);
  }
  return false;
}

