// A small schema language for request parameters. Validation runs before an endpoint executes, so its failures
// are never stored under an idempotency key (stripe-facts §3). Unknown parameters are refused as Stripe does.
import { parameterInvalid, parameterMissing, parameterUnknown } from './errors.js';
import { isSupportedCurrency, unsupportedCurrencyMessage } from './money.js';
import type { ParamMap, ParamValue } from './form.js';

export interface Field<T, R extends boolean = boolean> {
  readonly required: R;
  parse(value: ParamValue, param: string): T;
}

export type Schema = Readonly<Record<string, Field<unknown>>>;

type FieldType<F> = F extends Field<infer T> ? T : never;
type RequiredKeys<S extends Schema> = { [K in keyof S]: S[K] extends Field<unknown, true> ? K : never }[keyof S];
type OptionalKeys<S extends Schema> = Exclude<keyof S, RequiredKeys<S>>;

export type Parsed<S extends Schema> = { -readonly [K in RequiredKeys<S>]: FieldType<S[K]> } & {
  -readonly [K in OptionalKeys<S>]?: FieldType<S[K]>;
};

function field<T>(parse: (value: ParamValue, param: string) => T): Field<T, false> {
  return { required: false, parse };
}

export function required<T>(inner: Field<T>): Field<T, true> {
  return { required: true, parse: inner.parse };
}

function asText(value: ParamValue, param: string, what: string): string {
  if (typeof value !== 'string') throw parameterInvalid(param, `Invalid ${what}: ${JSON.stringify(value)}`);
  return value;
}

export function str(options: { maxLength?: number } = {}): Field<string, false> {
  return field((value, param) => {
    const text = asText(value, param, 'string');
    if (options.maxLength !== undefined && text.length > options.maxLength) {
      throw parameterInvalid(param, `Invalid ${param}: must be at most ${options.maxLength} characters`);
    }
    return text;
  });
}

/**
 * A `currency` parameter: one Stripe supports (money.ts), in any case, read as lowercase. Refused as Stripe refuses
 * it, before anything runs, on every endpoint that takes one, list filters included.
 */
export function currency(): Field<string, false> {
  return field((value, param) => {
    const text = asText(value, param, 'string');
    if (!isSupportedCurrency(text)) throw parameterInvalid(param, unsupportedCurrencyMessage(text));
    return text.toLowerCase();
  });
}

export function int(options: { min?: number; max?: number } = {}): Field<number, false> {
  return field((value, param) => {
    const text = asText(value, param, 'integer');
    const number = Number(text);
    // Past 2^53 a number is no longer the one sent (and past 1e21 it prints with an exponent): refused, as Stripe
    // refuses what its 64-bit integers cannot hold, never taken as a neighbour of the figure given.
    if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(number)) throw parameterInvalid(param, `Invalid integer: ${text}`, 'parameter_invalid_integer');
    if (options.min !== undefined && number < options.min) {
      throw parameterInvalid(param, `This value must be greater than or equal to ${options.min}.`, 'parameter_invalid_integer');
    }
    if (options.max !== undefined && number > options.max) {
      throw parameterInvalid(param, `This value must be less than or equal to ${options.max}.`, 'parameter_invalid_integer');
    }
    return number;
  });
}

export function bool(): Field<boolean, false> {
  return field((value, param) => {
    const text = asText(value, param, 'boolean');
    if (text === 'true') return true;
    if (text === 'false') return false;
    throw parameterInvalid(param, `Invalid boolean: ${text}`);
  });
}

function oneOfList(values: readonly string[]): string {
  if (values.length <= 2) return values.join(' or ');
  return `${values.slice(0, -1).join(', ')}, or ${values.at(-1) ?? ''}`;
}

export function oneOf<const V extends readonly string[]>(values: V): Field<V[number], false> {
  return field((value, param) => {
    const text = asText(value, param, 'string');
    if (!values.includes(text)) throw parameterInvalid(param, `Invalid ${param}: must be one of ${oneOfList(values)}`);
    return text as V[number];
  });
}

export function strList(): Field<string[], false> {
  return field((value, param) => {
    if (!Array.isArray(value)) throw parameterInvalid(param, `Invalid array`);
    return value.map((item, index) => asText(item, `${param}[${index}]`, 'string'));
  });
}

/** A list of structured entries, `items[0][price]=…` (indexed) or `items[][price]=…`. */
export function arrayOf<T>(inner: Field<T>): Field<T[], false> {
  return field((value, param) => {
    if (!Array.isArray(value)) throw parameterInvalid(param, `Invalid array`);
    return value.map((item, index) => inner.parse(item, `${param}[${index}]`));
  });
}

export function object<S extends Schema>(schema: S): Field<Parsed<S>, false> {
  return field((value, param) => {
    if (typeof value === 'string' || Array.isArray(value)) throw parameterInvalid(param, `Invalid object`);
    return validate(schema, value, param);
  });
}

/** Stripe's `created` filter: an integer or a `{gt, gte, lt, lte}` range. */
export interface Range {
  gt?: number;
  gte?: number;
  lt?: number;
  lte?: number;
}
const rangeSchema = { gt: int(), gte: int(), lt: int(), lte: int() };
export function range(): Field<Range, false> {
  return field((value, param) => {
    if (typeof value === 'string') {
      const exact = int().parse(value, param);
      return { gte: exact, lte: exact };
    }
    return object(rangeSchema).parse(value, param);
  });
}

/**
 * Metadata as sent: an empty value deletes that key and `metadata=` (null) clears every key, which `null`
 * stands for here. Limits per stripe-facts §7.
 */
export type MetadataParam = Record<string, string> | null;
const METADATA_MAX_KEYS = 50;
export function metadata(): Field<MetadataParam, false> {
  return field((value, param) => {
    if (value === '') return null;
    if (typeof value === 'string') throw parameterInvalid(param, 'Invalid object');
    const entries = Array.isArray(value) ? value.map((item, index) => [String(index), item] as const) : Object.entries(value);
    if (entries.length > METADATA_MAX_KEYS) throw parameterInvalid(param, `You can have at most ${METADATA_MAX_KEYS} keys in metadata.`);
    const result = metadataMap();
    for (const [key, item] of entries) {
      if (typeof item !== 'string') throw parameterInvalid(`${param}[${key}]`, 'Invalid value for metadata: must be a string');
      if (key.length > 40) {
        throw parameterInvalid(param, `Metadata keys can have up to 40 characters, but you passed in a key that is ${key.length} characters.`);
      }
      if (item.length > 500) {
        throw parameterInvalid(
          `${param}[${key}]`,
          `Metadata values can have up to 500 characters, but you passed in a value that is ${item.length} characters. Invalid value: ${item}`,
        );
      }
      result[key] = item;
    }
    return result;
  });
}

/**
 * A map for the caller's metadata keys. It has no prototype, so every key is data: on a plain object `__proto__` is
 * the prototype setter and `m['__proto__'] = 'x'` drops the pair without a word (stripe-facts §7 only limits a key's
 * length and its brackets). JSON.stringify, spreads and structuredClone copy its own keys, so it serializes as Stripe's.
 */
export function metadataMap(): Record<string, string> {
  return Object.create(null) as Record<string, string>;
}

/**
 * Applies a metadata parameter to stored metadata, returning the new map (objects are replaced, not mutated).
 * The 50-key limit holds for what the object ends up with, not only for what one request sends, so an update
 * that would leave more keys is refused (`param` names it). Callers merge before changing anything else, so a
 * refusal leaves the object as it was.
 */
export function mergeMetadata(current: Record<string, string>, update: MetadataParam | undefined, param = 'metadata'): Record<string, string> {
  if (update === undefined) return current;
  if (update === null) return metadataMap();
  const next = Object.assign(metadataMap(), current);
  for (const [key, value] of Object.entries(update)) {
    if (value === '') delete next[key];
    else next[key] = value;
  }
  const count = Object.keys(next).length;
  if (count > METADATA_MAX_KEYS) {
    throw parameterInvalid(param, `You can have at most ${METADATA_MAX_KEYS} keys in metadata; this update would leave the object with ${count}.`);
  }
  return next;
}

export function validate<S extends Schema>(schema: S, raw: ParamMap, prefix = ''): Parsed<S> {
  const name = (key: string): string => (prefix === '' ? key : `${prefix}[${key}]`);
  for (const key of Object.keys(raw)) {
    if (!Object.hasOwn(schema, key)) throw parameterUnknown(name(key));
  }
  const out: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(schema)) {
    const value = raw[key];
    // An empty value is how clients send null; for everything but metadata it means "not given".
    const absent = value === undefined || (value === '' && key !== 'metadata');
    if (absent) {
      if (spec.required) throw parameterMissing(name(key));
      continue;
    }
    out[key] = spec.parse(value, name(key));
  }
  // Each key was parsed by its own field, so the record has exactly the shape Parsed<S> describes.
  return out as Parsed<S>;
}

/** Accepts any value without checking it: structures the sandbox takes but does not model. */
export function accepted(): Field<ParamValue, false> {
  return field((value) => value);
}
