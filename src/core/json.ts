// JSON values and their RFC 8785 canonical form. Hashes, effect ids and signatures all depend on the exact
// bytes, so anything without one canonical form is refused here instead of being silently coerced.
import serialize from 'canonicalize';
import { createHash } from 'node:crypto';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export class NonCanonicalValueError extends Error {
  readonly code = 'non_canonical_value';
  constructor(readonly path: string, what: string) {
    super(`Value at ${path} has no canonical JSON form: ${what}. Use plain objects, arrays, strings, finite numbers, booleans and null.`);
    this.name = 'NonCanonicalValueError';
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') return `an instance of ${value.constructor?.name ?? 'an unknown class'}`;
  return `a ${typeof value}`;
}

// RFC 8785 §3.2.2.2: a lone surrogate has no UTF-8 form, so it cannot be hashed the same way twice.
const LONE_SURROGATE = /\p{Surrogate}/u;

/** Checks that `value` is plain JSON and returns it typed. Undefined object properties are dropped, as JSON does. */
export function assertJson(value: unknown, path = '$', ancestors: readonly object[] = []): Json {
  switch (typeof value) {
    case 'string':
      if (LONE_SURROGATE.test(value)) throw new NonCanonicalValueError(path, 'a string with a lone UTF-16 surrogate');
      return value;
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new NonCanonicalValueError(path, String(value));
      return value;
    case 'object': {
      if (value === null) return null;
      if (ancestors.includes(value)) throw new NonCanonicalValueError(path, 'a circular reference');
      const inside = [...ancestors, value];
      if (Array.isArray(value)) {
        // An index loop, not map(): map skips the holes of a sparse array, which would serialise as "[1,,2]".
        const items: Json[] = [];
        for (let index = 0; index < value.length; index += 1) {
          const item: unknown = value[index];
          if (item === undefined) throw new NonCanonicalValueError(`${path}[${index}]`, 'undefined inside an array');
          items.push(assertJson(item, `${path}[${index}]`, inside));
        }
        return items;
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) throw new NonCanonicalValueError(path, describe(value));
      const out: JsonObject = {};
      for (const [key, item] of Object.entries(value)) {
        if (item === undefined) continue;
        // Assigning "__proto__" would set the copy's prototype: the field would vanish from the hashed bytes.
        if (key === '__proto__') throw new NonCanonicalValueError(`${path}.${key}`, 'a "__proto__" key, which a JavaScript object cannot copy as data');
        if (LONE_SURROGATE.test(key)) throw new NonCanonicalValueError(`${path}.${key}`, 'a key with a lone UTF-16 surrogate');
        out[key] = assertJson(item, `${path}.${key}`, inside);
      }
      return out;
    }
    default:
      throw new NonCanonicalValueError(path, describe(value));
  }
}

/** RFC 8785 canonical JSON of a plain JSON value. */
export function canonicalJson(value: unknown): string {
  const checked = assertJson(value);
  const text = serialize(checked);
  if (text === undefined) throw new NonCanonicalValueError('$', 'the canonicaliser returned nothing');
  return text;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

export function isJsonObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
