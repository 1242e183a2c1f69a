// `data.previous_attributes`: the prior values of the fields that changed. Nested objects are diffed field by
// field; arrays are reported whole when any element changed; a field that did not exist before reads as null.
type Json = unknown;

function isPlainObject(value: Json): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function same(a: Json, b: Json): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export function previousAttributes(before: Json, after: Json): Record<string, Json> | undefined {
  if (!isPlainObject(before) || !isPlainObject(after)) return undefined;
  // Own keys only, into a map without a prototype: a metadata key `__proto__` is data here too (core/params.ts).
  const changed = Object.create(null) as Record<string, Json>;
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  for (const key of keys) {
    const old = Object.hasOwn(before, key) ? before[key] : undefined;
    const now = Object.hasOwn(after, key) ? after[key] : undefined;
    if (same(old, now)) continue;
    if (isPlainObject(old) && isPlainObject(now)) {
      changed[key] = previousAttributes(old, now) ?? {};
    } else {
      changed[key] = old === undefined ? null : old;
    }
  }
  return Object.keys(changed).length === 0 ? undefined : changed;
}

export function snapshot<T>(value: T): T {
  return structuredClone(value);
}
